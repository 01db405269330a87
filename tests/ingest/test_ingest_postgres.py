"""The write path on the scale database: PostgreSQL, several processes appending to one run at once."""

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from tests.streams import HOSTILE_LINES, STREAM_FIXTURES

pytestmark = pytest.mark.scale

REPO = Path(__file__).resolve().parents[2]
PG = "postgres://postgres@127.0.0.1:5432/"

APPEND = """
import sys
from runs.ingest import writer as ingest
from runs.models import Run
run = Run.objects.get(name="shared")
who, n = sys.argv[1], int(sys.argv[2])
for i in range(0, n, 10):
    ingest.append(run, [{"type": "api_call", "agentId": who, "operation": "files.read_file", "i": j} for j in range(i, i + 10)])
"""

DUMP = """
import json
from runs.models import Run
from tests.streams import projection_dump
print(json.dumps({r.name: projection_dump(r) for r in Run.objects.order_by("name")}, default=str, sort_keys=True))
"""


@pytest.fixture
def pg_env(tmp_path):
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(PG + "postgres", autocommit=True, connect_timeout=2)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL does not answer ({exc}); scripts/services starts it")
    db = f"gg_ingest_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{db}"')
    env = {**os.environ, "DATABASE_URL": PG + db, "GG_CONSOLE_VAR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "gg_console.settings"}  # fmt: skip
    env.pop("REDIS_URL", None)
    try:
        manage(env, "migrate", "--noinput")
        yield env
    finally:
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
        admin.close()


def manage(env, *args, input=None):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                          check=True, timeout=300, input=input)  # fmt: skip


def dump(env):
    return json.loads(manage(env, "shell", "-c", DUMP).stdout.splitlines()[-1])


def test_ingest_export_and_rebuild_on_postgresql(pg_env, tmp_path):
    for name, path in STREAM_FIXTURES.items():
        out = manage(pg_env, "ingest", str(path), "--run", name).stdout.decode()
        assert out.startswith("stored ")
        exported = tmp_path / f"{name}.out"
        manage(pg_env, "export", name, "--output", str(exported))
        if name != "malformed_tail":
            assert exported.read_bytes() == path.read_bytes()
    before = dump(pg_env)
    assert before["multi_agent"]["run"]["agent_count"] == 7
    assert before["real-mock-session"]["run"]["status"] == "completed"
    manage(pg_env, "rebuild_projections", "--all")
    after = dump(pg_env)
    assert after == before


def test_concurrent_appends_to_one_run_keep_seq_gapless(pg_env):
    manage(pg_env, "shell", "-c", "from runs.models import Run; Run.objects.create(name='shared')")
    procs = [
        subprocess.Popen([sys.executable, "manage.py", "shell", "-c", APPEND.replace("sys.argv[1]", repr(who)).replace("sys.argv[2]", "300")],
                         cwd=REPO, env=pg_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for who in ("agent-a", "agent-b", "agent-c")
    ]  # fmt: skip
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    shared = dump(pg_env)["shared"]
    assert [e[0] for e in shared["events"]] == list(range(1, 901))
    assert shared["run"]["last_seq"] == 900 and shared["run"]["call_count"] == 900
    assert {a: row["api_calls"] for a, row in shared["agents"].items()} == {
        "agent-a": {"files.read_file": 300}, "agent-b": {"files.read_file": 300}, "agent-c": {"files.read_file": 300},
    }  # fmt: skip


def test_nul_characters_and_numbers_past_a_double_on_postgresql(pg_env, tmp_path):
    # PostgreSQL's text and jsonb columns refuse NUL; a double refuses 1e400: the chunk used to fail
    stream = tmp_path / "hostile.ndjson"
    stream.write_bytes(b"\n".join(HOSTILE_LINES) + b"\n")
    out = manage(pg_env, "ingest", str(stream), "--run", "hostile").stdout.decode()
    assert out.strip() == "stored 4, rejected 1"
    exported = tmp_path / "out.ndjson"
    manage(pg_env, "export", "hostile", "--output", str(exported))
    assert exported.read_bytes() == b"\n".join(HOSTILE_LINES[:4]) + b"\n"
    before = dump(pg_env)["hostile"]
    assert set(before["agents"]) == {"root", "a\ufffdb"}
    manage(pg_env, "rebuild_projections", "hostile")
    assert dump(pg_env)["hostile"] == before
