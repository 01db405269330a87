"""The write path on the scale database: PostgreSQL, several processes appending to one run at once."""

import json
import subprocess
import sys

import pytest

from tests.ingest_helpers import dump, manage
from tests.paths import REPO
from tests.streams import HOSTILE_LINES, STREAM_FIXTURES

pytestmark = pytest.mark.scale


APPEND = """
import sys
from runs.ingest import writer as ingest
from runs.models import Run
run = Run.objects.get(name="shared")
who, n = sys.argv[1], int(sys.argv[2])
for i in range(0, n, 10):
    ingest.append(run, [{"type": "api_call", "agentId": who, "operation": "files.read_file", "i": j} for j in range(i, i + 10)])
"""



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


# The fold's writes on PostgreSQL send each column as one JSON array (runs.ingest.fold_flush._columns):
# values JSON has no number or type for, and text JSON must escape, come back as they were written.
ROUND_TRIP = r"""
import json
from datetime import datetime, timezone
from runs.ingest.fold_flush import insert_rows, update_rows
from runs.ingest.fold_pool import Message
from runs.models import Agent, PooledMessage, Run
run = Run.objects.create(name="round-trip")
odd = 'a "quote", a back\\slash, {braces}, a comma, ünïcödé ✓, \'single\', \n a newline'
rows = [Message("a", "m1", label=odd, spans=[[1, 2]], billed=float("inf"), cost=float("nan"), tokens=2**62,
                estimated=True),
        Message("a", "m2", spans={"k": odd, "n": None}, billed=-float("inf"), weight=1e-300)]
fields = ["agent_id", "message_id", "label", "spans", "billed", "cost", "tokens", "estimated", "weight"]
insert_rows(PooledMessage, rows, fields + ["role", "band", "tool", "seq"], run_id=run.pk)
print(json.dumps([[repr(v) for v in row] for row in PooledMessage.objects.order_by("message_id").values_list(*fields)]))
rows[0].label, rows[0].billed, rows[1].spans, rows[1].cost = odd[::-1], 2.5, [odd, None], float("-inf")
update_rows(PooledMessage, rows, ["label", "billed", "spans", "cost"], keys=("agent_id", "message_id"), run_id=run.pk)
print(json.dumps([[repr(v) for v in row] for row in PooledMessage.objects.order_by("message_id").values_list(*fields)]))
agent = Agent.objects.create(run=run, agent_id="a")
agent.blocked_since = datetime(2026, 12, 4, 5, 6, 7, 891011, tzinfo=timezone.utc)
update_rows(Agent, [agent], ["blocked_since"])
print(repr(Agent.objects.get(pk=agent.pk).blocked_since))
"""


def test_the_folds_bulk_writes_keep_every_value_on_postgresql(pg_env):
    inserted, updated, moment = manage(pg_env, "shell", "-c", ROUND_TRIP).stdout.decode().splitlines()[-3:]
    odd = 'a "quote", a back\\slash, {braces}, a comma, ünïcödé ✓, \'single\', \n a newline'
    assert json.loads(inserted) == [
        ["'a'", "'m1'", repr(odd), "[[1, 2]]", "inf", "nan", repr(2**62), "True", "None"],
        ["'a'", "'m2'", "''", repr({"k": odd, "n": None}), "-inf", "None", "None", "False", "1e-300"]]
    assert json.loads(updated) == [
        ["'a'", "'m1'", repr(odd[::-1]), "[[1, 2]]", "2.5", "nan", repr(2**62), "True", "None"],
        ["'a'", "'m2'", "''", repr([odd, None]), "-inf", "-inf", "None", "False", "1e-300"]]
    assert moment == "datetime.datetime(2026, 12, 4, 5, 6, 7, 891011, tzinfo=datetime.timezone.utc)"


PAGES = """
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from runs.models import Run
client = Client()
client.force_login(User.objects.create_superuser("pg-viewer", password="x"))
for run in Run.objects.order_by("pk"):
    urls = [reverse(f"runs:{name}", args=[run.pk]) for name in
            ("detail", "feed", "header", "agents", "timeline", "stores", "divergences", "refusals", "arms", "project")]
    urls += [reverse("runs:timeline", args=[run.pk]) + "?start=0.2&end=0.6", reverse("runs:api_report", args=[run.pk])]
    urls += [reverse("runs:agent", args=[run.pk, agent]) for agent in run.agents.values_list("agent_id", flat=True)]
    for url in urls:
        print("page", url, client.get(url).status_code)
"""


def test_every_page_of_every_run_answers_on_postgresql_whatever_its_stamps(pg_env, tmp_path):
    """The pages' SQL that differs by database (the Timeline's time arithmetic, the Refusals roster's
    aggregates, the search) on PostgreSQL: every page of every fixture run answers, and a stamp
    PostgreSQL cannot read (gg's are stored verbatim) is a mark left out, as julianday leaves it out on
    SQLite, never a failed page."""
    for name, path in STREAM_FIXTURES.items():
        manage(pg_env, "ingest", str(path), "--run", name)
    stamps = ["2026-12-02T10:00:00Z", "2026-02-30T10:00:01Z", "yesterday", "2026-12-02T10:00:02.123456789Z", ""]
    lines = [json.dumps({"type": t, "agentId": "root", "timestamp": s})
             for s in stamps for t in ("turn_started", "api_call", "api_result", "turn_outcome")]
    hostile = tmp_path / "stamps.ndjson"
    hostile.write_text("\n".join(lines) + "\n")
    manage(pg_env, "ingest", str(hostile), "--run", "stamps")
    out = [line.split() for line in manage(pg_env, "shell", "-c", PAGES).stdout.decode().splitlines()
           if line.startswith("page ")]
    assert len(out) >= 12 * (len(STREAM_FIXTURES) + 1)
    assert [url for _, url, status in out if status != "200"] == []


def test_a_run_that_outgrows_the_planners_statistics_gets_the_database_analyzed(pg_env, tmp_path):
    """Until its tables are analyzed PostgreSQL plans a run's reads for a few rows (the feed's last
    window of a 200,000-event run: a bitmap of the whole run, 106 ms against 0.2 by the index)."""
    import psycopg

    from runs.ingest.statistics import FIRST
    from tests.ingest_helpers import PG

    stream = tmp_path / "big.ndjson"
    stream.write_text("".join(json.dumps({"type": "log", "level": "info", "message": f"line {i}"}) + "\n"
                              for i in range(FIRST + 100)))
    database = pg_env["DATABASE_URL"].rsplit("/", 1)[1]
    with psycopg.connect(PG + database) as conn:
        assert conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'runs_event'").fetchone()[0] < 0
    manage(pg_env, "ingest", str(stream), "--run", "big")
    with psycopg.connect(PG + database) as conn:
        known = conn.execute("SELECT reltuples FROM pg_class WHERE relname = 'runs_event'").fetchone()[0]
        analyzed = conn.execute("SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'runs_event'").fetchone()[0]
    assert known >= FIRST
    assert analyzed is not None  # by the write path: autovacuum's own would be last_autoanalyze
