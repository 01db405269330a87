"""External gg: a stand-in executable prints a recorded stream with delays; every line lands
through ingest, stderr is kept as warnings, and the stream's session_ended decides the status."""

import json
import stat
import sys

import pytest

from tests.console_server import ConsoleServer
from tests.paths import GG_FIXTURES
from tests.engine_helpers import run_spec

STAND_IN = """#!{python}
import json, sys, time
args = sys.argv[1:]
assert args[0] == "--config", args
config = json.load(open(args[1]))
assert config["capabilitySet"]["agents"][0]["slug"] == "coder" and config["prompt"] == "Make a game."
print("stand-in gg starting", file=sys.stderr, flush=True)
for line in open({stream!r}):
    sys.stdout.write(line)
    sys.stdout.flush()
    time.sleep(0.01)
print("not json at all", flush=True)
"""


def _stand_in(tmp_path, script):
    """An executable `gg` in tmp_path running `script`."""
    binary = tmp_path / "gg"
    binary.write_text(script)
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    return binary


def _server_on_gg(tmp_path, script):
    """A console's var/ and database of its own (migrated), whose GG_BINARY is a stand-in running `script`."""
    server = ConsoleServer(tmp_path / "var")
    server.var_dir.mkdir()
    server.env["GG_BINARY"] = str(_stand_in(tmp_path, script))
    server.manage("migrate", "--noinput")
    return server


@pytest.mark.django_db(transaction=True)
def test_a_run_executed_by_gg_is_tailed_into_ingest(tmp_path, monkeypatch):
    stream = GG_FIXTURES / "real-mock-session.ndjson"
    monkeypatch.setenv("GG_BINARY", str(_stand_in(tmp_path, STAND_IN.format(python=sys.executable, stream=str(stream)))))
    data = {"task": "Make a game.", "engine": "gg",
            "agents": [{"slug": "coder", "name": "Coder", "capabilities": [{"id": "write-file", "enabled": True}]}],
            "provider": {"kind": "scripted", "script": {}}}
    run, records = run_spec(data, tmp_path)
    recorded = [json.loads(line) for line in stream.read_text().splitlines()]
    assert records[: len(recorded)] == recorded  # verbatim, in order
    assert records[-1]["type"] == "log" and records[-1]["level"] == "warn"
    assert "stand-in gg starting" in records[-1]["message"]
    assert run.status == "completed" and run.source == "gg"
    assert run.rejected_lines.get().reason  # the non-JSON line is kept, not dropped
    invocation = json.loads((tmp_path / "ws" / ".gg" / "invocation.json").read_text())
    assert invocation["cancelFile"].endswith(".gg/cancel") and invocation["sessionId"] == run.session_id


def test_engine_gg_needs_gg_binary(monkeypatch):
    from runs.engine.validation import validate_spec

    monkeypatch.delenv("GG_BINARY", raising=False)
    _, errors = validate_spec({"task": "t", "engine": "gg", "agents": [{"slug": "a"}],
                               "provider": {"kind": "scripted", "script": {}}})
    assert errors == [{"path": "engine", "message": "engine 'gg' needs GG_BINARY set to the gg executable"}]


HANGING = """#!{python}
import json, sys, time
print(json.dumps({{"type": "session_started", "sessionId": "s"}}), flush=True)
for i in range(5):
    print(json.dumps({{"type": "log", "level": "info", "message": f"step {{i}}"}}), flush=True)
time.sleep(600)
"""

RUN_ON_GG = """
import json
from runs.engine.runner import start_run
from runs.models import Run
run = Run.objects.create(name="gg-crash", source="engine", status="queued", launch_spec=json.loads({spec!r}))
start_run(run)
"""

ROW = ("SELECT source, status, last_seq, (SELECT count(*) FROM runs_event WHERE run_id = r.id), end_reason"
       " FROM runs_run r WHERE name = 'gg-crash'")


def test_a_run_on_gg_whose_worker_died_is_swept_interrupted_when_a_server_starts(tmp_path):
    """The gg binary's runs are swept like the engine's: a worker killed mid-run (gg with it) leaves
    the run `running` until the next server or worker start marks it interrupted, its events kept."""
    import os
    import signal
    import sqlite3
    import subprocess
    import time

    from runs.launch.dispatch import INTERRUPTED_REASON
    from tests.paths import REPO

    server = _server_on_gg(tmp_path, HANGING.format(python=sys.executable))
    spec = json.dumps({"task": "Hang.", "engine": "gg", "agents": [{"slug": "coder"}],
                       "provider": {"kind": "scripted", "script": {}}})
    worker = subprocess.Popen([sys.executable, "manage.py", "shell", "-c", RUN_ON_GG.format(spec=spec)], cwd=REPO,
                              env=server.env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def row():
        with sqlite3.connect(server.var_dir / "db.sqlite3", timeout=30) as conn:
            return conn.execute(ROW).fetchone()

    try:
        deadline = time.monotonic() + 120
        while True:
            if (row() or ())[:3] == ("gg", "running", 6):
                break
            assert worker.poll() is None, worker.stdout.read().decode()[-3000:]
            assert time.monotonic() < deadline, row()
            time.sleep(0.2)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)  # the worker and the gg it started, as a crash takes them
        worker.wait()
    assert row() == ("gg", "running", 6, 6, "")  # nobody told the database
    # what a starting server or worker does first (gg_console.asgi)
    subprocess.run([sys.executable, "-c", "import gg_console.asgi"], cwd=REPO, env=server.env, check=True, timeout=120)
    assert row() == ("gg", "interrupted", 6, 6, INTERRUPTED_REASON)


CHATTY = """#!{python}
import json, os, sys, time
open({pid_file!r}, "w").write(str(os.getpid()))
while True:  # never ends by itself, and never reads its cancel file
    print(json.dumps({{"type": "log", "level": "info", "message": "still here"}}), flush=True)
    time.sleep(0.01)
"""


GG_RUN_DELETED = """
import json, os, threading, time
from django.utils import timezone
from runs.engine.runner import start_run
from runs.models import Run

run = Run.objects.create(name="gg-deleted", source="engine", status="queued", launch_spec=json.loads({spec!r}))

def delete_when_talking():
    while Run.objects.filter(pk=run.pk, last_seq__lt=20).exists():
        time.sleep(0.02)
    Run.objects.filter(pk=run.pk).update(deletion_requested_at=timezone.now(), cancel_requested=True)

threading.Thread(target=delete_when_talking).start()
started = time.monotonic()
status = start_run(run)
try:
    os.kill(int(open({pid_file!r}).read()), 0)
    gg = "alive"
except ProcessLookupError:
    gg = "gone"
print(json.dumps({{"status": status, "seconds": time.monotonic() - started, "gg": gg}}))
"""


def test_a_run_on_gg_deleted_while_it_runs_takes_the_gg_process_with_it(tmp_path):
    """Its next line meets writer.RunGone: the run stops and gg is killed and reaped, not left blocked
    on a pipe nobody reads. (A process of its own on a database file: the deletion's write and the
    run's meet, and on the test database one would fail at once instead of waiting.)"""
    pid_file = tmp_path / "gg.pid"
    server = _server_on_gg(tmp_path, CHATTY.format(python=sys.executable, pid_file=str(pid_file)))
    spec = json.dumps({"task": "Talk.", "engine": "gg", "agents": [{"slug": "coder"}],
                       "provider": {"kind": "scripted", "script": {}}})
    out = server.manage("shell", "-c", GG_RUN_DELETED.format(spec=spec, pid_file=str(pid_file)))
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["status"] == "canceled" and result["gg"] == "gone" and result["seconds"] < 30, result
