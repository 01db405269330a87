"""Faults, on a real file-backed SQLite database and real processes, as an operator meets them:

* a worker killed (SIGKILL) mid-run leaves the run `interrupted` once a server or worker starts,
  and every event stored before the kill readable, seq gapless;
* a Daphne restart during a live view: every connected client resumes with `?after=<cursor>`
  and ends with every seq exactly once, in order;
* a busy database (another process holding the write lock) makes an import wait, not fail.
"""

import asyncio
import json
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.console_server import ConsoleServer
from tests.paths import REPO
from tests.feed_helpers import cursor, seqs

websockets = pytest.importorskip("websockets")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A console on its own SQLite file (migrated, users, a token); Daphne started on demand."""
    server = ConsoleServer(tmp_path_factory.mktemp("faults-var"))
    server.setup()
    yield server
    server.stop()


def db(server):
    conn = sqlite3.connect(server.var_dir / "db.sqlite3", timeout=30)
    conn.row_factory = sqlite3.Row
    return conn


def run_row(server, name):
    with db(server) as conn:
        return conn.execute("SELECT id, status, last_seq FROM runs_run WHERE name = ?", (name,)).fetchone()


def stored_seqs(server, run_id):
    with db(server) as conn:
        return [r[0] for r in conn.execute("SELECT seq FROM runs_event WHERE run_id = ? ORDER BY seq", (run_id,))]


# ---------------------------------------------------------------------------------------------


def slow_spec(tmp_path):
    """A run that keeps storing events for a long while: 200 turns, each a short shell command."""
    turns = [{"text": f"step {i}", "toolCalls": [{"name": "shell", "args": {"command": "sleep 0.05"}}]}
             for i in range(200)]
    spec = {
        "name": "slow", "task": "Keep working.",
        "agents": [{"slug": "worker", "name": "Worker", "executionMode": "tool_calling",
                    "capabilities": [{"id": "shell", "enabled": True}]}],
        "limits": {"maxTurns": 500, "maxRuntimeSecs": 600, "maxParallel": 1, "maxConsecutiveErrors": 3},
        "provider": {"kind": "scripted", "script": {"worker": turns}},
    }
    path = tmp_path / "slow.spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_worker_killed_mid_run_leaves_it_interrupted_with_every_stored_event_readable(server, tmp_path):
    worker = subprocess.Popen(
        [sys.executable, "manage.py", "launch", str(slow_spec(tmp_path)), "--name", "killed"],
        cwd=REPO, env=server.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 120
        while True:  # wait until the run is well under way, then kill it without warning
            row = run_row(server, "killed")
            if row and row["last_seq"] >= 60:
                break
            assert worker.poll() is None, worker.stdout.read().decode()
            assert time.monotonic() < deadline, "the run did not get going"
            time.sleep(0.1)
        worker.send_signal(signal.SIGKILL)
        worker.wait()
    finally:
        if worker.poll() is None:
            worker.kill()
            worker.wait()
    assert run_row(server, "killed")["status"] == "running"  # nobody told the database

    # What a starting server (or worker) does first: the interrupted-run sweep in gg_console.asgi.
    subprocess.run([sys.executable, "-c", "import gg_console.asgi"], cwd=REPO, env=server.env, check=True,
                   timeout=120)
    row = run_row(server, "killed")
    assert row["status"] == "interrupted"

    # Every event the killed process committed is there, seq gapless, and export returns them all.
    seq = stored_seqs(server, row["id"])
    assert seq == list(range(1, row["last_seq"] + 1)) and len(seq) >= 60
    exported = server.manage("export", "killed").stdout.splitlines()
    assert len(exported) == len(seq)
    types = [json.loads(line)["type"] for line in exported]
    assert types[0] == "session_started" and "session_ended" not in types  # cut off mid-run
    with db(server) as conn:
        assert exported == [r[0] for r in conn.execute(
            "SELECT raw FROM runs_event WHERE run_id = ? ORDER BY seq", (row["id"],))]


# ---------------------------------------------------------------------------------------------


def post(server, run_pk, first, n):
    import urllib.request

    body = "".join(json.dumps({"timestamp": f"2026-08-03T00:00:{(first + i) % 60:02d}.{first + i:06d}Z",
                               "type": "log", "level": "info", "message": f"line {first + i}"}) + "\n"
                   for i in range(n)).encode()
    request = urllib.request.Request(f"{server.url}/api/runs/{run_pk}/events", data=body, method="POST", headers={
        "Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"})
    with urllib.request.urlopen(request, timeout=30) as response:
        assert json.load(response)["stored"] == n


async def follow(server, run_pk, session_key, total, received):
    """A client as the feed page behaves: on a drop, reconnect asking for what follows its cursor."""
    after = 0
    while len(received) < total:
        url, headers = server.feed_socket(run_pk, session_key, after)
        try:
            async with websockets.connect(url, additional_headers=headers, open_timeout=5) as socket:
                while len(received) < total:
                    message = await asyncio.wait_for(socket.recv(), timeout=30)
                    received += seqs(message)
                    if 'id="feed-cursor"' in message:
                        after = cursor(message)
                        await socket.send(json.dumps({"ack": after}))
        except (OSError, websockets.ConnectionClosed, asyncio.TimeoutError):
            await asyncio.sleep(0.2)  # the server is away: try again


def test_daphne_restart_during_a_live_view_resumes_every_client_without_a_gap(server):
    session_key, run_pk = server.operator_session_and_run("restart-feed")
    server.start()
    clients, total = 5, 90

    async def scenario():
        received = [[] for _ in range(clients)]
        followers = [asyncio.create_task(follow(server, run_pk, session_key, total, r)) for r in received]
        await asyncio.to_thread(post, server, run_pk, 1, 30)
        while min(map(len, received)) < 30:
            await asyncio.sleep(0.05)
        await asyncio.to_thread(server.restart)  # every socket drops
        await asyncio.to_thread(post, server, run_pk, 31, 30)  # stored while the clients reconnect
        await asyncio.sleep(0.5)
        await asyncio.to_thread(post, server, run_pk, 61, 30)
        await asyncio.wait_for(asyncio.gather(*followers), timeout=120)
        return received

    try:
        received = asyncio.run(scenario())
    finally:
        server.stop()
    for got in received:
        assert got == list(range(1, total + 1))


# ---------------------------------------------------------------------------------------------


HOLD_THE_WRITE_LOCK = """
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
print("released", flush=True)
"""


def test_a_busy_database_makes_an_import_wait_not_fail(server, tmp_path):
    stream = tmp_path / "busy.ndjson"
    stream.write_text("".join(json.dumps({"timestamp": f"2026-08-03T00:00:00.{i:06d}Z", "type": "log",
                                          "level": "info", "message": f"busy {i}"}) + "\n" for i in range(500)))
    holder = subprocess.Popen([sys.executable, "-c", HOLD_THE_WRITE_LOCK, str(server.var_dir / "db.sqlite3"), "5"],
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline().strip() == "locked"
    importer = subprocess.Popen([sys.executable, "manage.py", "ingest", str(stream), "--run", "busy"],
                                cwd=REPO, env=server.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # The lock is released while the import is still waiting for it, then the import goes through.
    assert holder.stdout.readline().strip() == "released"
    assert importer.poll() is None
    holder.wait()
    out, err = importer.communicate(timeout=120)
    assert importer.returncode == 0, err
    assert out.strip() == "stored 500, rejected 0"
    row = run_row(server, "busy")
    assert stored_seqs(server, row["id"]) == list(range(1, 501))
