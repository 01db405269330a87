"""The scale dispatch path: runs launched in one process go over Redis to `manage.py runworker
gg-runs` in another, on a PostgreSQL database both see. Cancel and the interrupted sweep cross
processes too: a run a live worker holds keeps its lease and is spared."""

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

pytestmark = pytest.mark.scale

REPO = Path(__file__).resolve().parents[2]
REDIS_URL = "redis://127.0.0.1:6379/8"
PG = "postgres://postgres@127.0.0.1:5432/"

LAUNCH = """
import json, sys
from runs.demo import demo_spec
from runs.launch.forms import LaunchForm
from runs.launch.services import run_launch
spec = demo_spec(sys.argv[1]) if sys.argv[1] != "slow" else None
if spec is None:
    spec = {"task": "List forever.", "agents": [{"slug": "root", "executionMode": "tool_calling",
            "capabilities": [{"id": "list-dir", "enabled": True}]}],
            "provider": {"kind": "scripted", "script": {"root": [{"delayMs": 200, "toolCalls": [
                {"name": "list_dir", "args": {"path": "."}}]}] * 300}}}
spec.pop("name", None)
form = LaunchForm.from_spec(spec)
run = run_launch(form=form)
print(run.pk if run else json.dumps(form.errors))
"""


@pytest.fixture
def scale_env(tmp_path):
    psycopg = pytest.importorskip("psycopg")
    redis = pytest.importorskip("redis")
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).flushdb()
        admin = psycopg.connect(PG + "postgres", autocommit=True, connect_timeout=2)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Redis or PostgreSQL does not answer ({exc}); scripts/services starts them")
    db = f"gg_launch_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{db}"')
    env = {**os.environ, "DATABASE_URL": PG + db, "REDIS_URL": REDIS_URL, "GG_CONSOLE_VAR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "gg_console.settings"}
    manage(env, "migrate", "--noinput")
    log = open(tmp_path / "worker.log", "wb")
    worker = subprocess.Popen([sys.executable, "manage.py", "runworker", "gg-runs"], cwd=REPO, env=env,
                              stdout=log, stderr=subprocess.STDOUT)
    conn = psycopg.connect(PG + db, autocommit=True)
    try:
        yield env, conn, worker
    finally:
        worker.terminate()
        worker.wait(timeout=10)
        conn.close()
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
        admin.close()


def manage(env, *args):
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                          text=True, check=True, timeout=120).stdout.strip().splitlines()


def launch(env, which):
    out = manage(env, "shell", "-c", LAUNCH.replace("sys.argv[1]", repr(which)))[-1]
    assert out.isdigit(), out
    return int(out)


def status(conn, pk):
    return conn.execute("SELECT status, turn_count FROM runs_run WHERE id = %s", [pk]).fetchone()


def wait(conn, pk, until, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        row = status(conn, pk)
        if until(*row):
            return row
        time.sleep(0.1)
    raise AssertionError(f"run {pk} stuck at {status(conn, pk)}")


def test_runworker_executes_a_launched_run_and_honours_cancel_and_leases(scale_env, tmp_path):
    env, conn, worker = scale_env
    pk = launch(env, "review")
    wait(conn, pk, lambda s, _: s not in ("queued", "running"))
    assert status(conn, pk)[0] == "completed", (tmp_path / "worker.log").read_text()
    types = [t for (t,) in conn.execute("SELECT type FROM runs_event WHERE run_id = %s ORDER BY seq", [pk])]
    assert types[0] == "session_started" and types[-1] == "session_ended" and "tool_call" in types

    slow = launch(env, "slow")
    wait(conn, slow, lambda s, turns: s == "running" and turns >= 2)
    # A sweep from another process (a restarted server) spares the run the live worker leases.
    swept = manage(env, "shell", "-c", "from runs.launch.dispatch import sweep_interrupted; print(sweep_interrupted())")
    assert swept[-1] == "0" and status(conn, slow)[0] == "running"
    manage(env, "shell", "-c", f"from runs.models import Run; from runs.launch.services import run_cancel; "
                               f"print(run_cancel(Run.objects.get(pk={slow})))")
    final, turns = wait(conn, slow, lambda s, _: s not in ("queued", "running"))
    assert final == "canceled" and turns < 100
    ended = conn.execute("SELECT raw FROM runs_event WHERE run_id = %s AND type = 'session_ended'", [slow]).fetchone()
    assert json.loads(ended[0])["status"] == "canceled"

    # A worker killed mid-run leaves its run running, lease expiring; the next start sweeps it.
    doomed = launch(env, "slow")
    wait(conn, doomed, lambda s, turns: s == "running" and turns >= 1)
    worker.kill()
    worker.wait()
    import redis

    redis.Redis.from_url(REDIS_URL).delete(f"gg-console:run-lease:{doomed}")  # rather than wait 30 s
    events_before = conn.execute("SELECT count(*) FROM runs_event WHERE run_id = %s", [doomed]).fetchone()[0]
    manage(env, "shell", "-c", "import gg_console.asgi")  # loading the application is a start
    assert status(conn, doomed)[0] == "interrupted"
    assert conn.execute("SELECT count(*) FROM runs_event WHERE run_id = %s", [doomed]).fetchone()[0] == events_before > 0
