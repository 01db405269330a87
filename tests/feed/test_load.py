"""Load: the feed benchmark's own delivery check, shorter. bench/feed starts a real Daphne on a
fresh SQLite database, connects browsers' sockets and appends events at a steady rate through
POST /api/runs/<run>/events; it exits non-zero when any client lost, doubled or reordered a row."""

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENTS, RATE, SECONDS = 8, 100, 3

pytest.importorskip("websockets")


def test_feed_under_load_loses_doubles_and_reorders_nothing(tmp_path):
    env = {**os.environ, "GG_BENCH_VAR": str(tmp_path), "PATH": f"{REPO / '.venv' / 'bin'}:{os.environ['PATH']}"}
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [str(REPO / "bench" / "feed"), "--clients", str(CLIENTS), "--rate", str(RATE), "--seconds", str(SECONDS)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    # One row per client: every event arrived (rows == RATE * SECONDS), none lost/doubled/reordered,
    # and each socket was closed by the server once the run ended.
    clients = [line.split() for line in lines if re.match(r"^\s+\d+\s+\d+", line)]
    assert len(clients) == CLIENTS
    for fields in clients:
        assert len(fields) == 8, " ".join(fields)  # a client's error follows its figures
        _, rows, lost, dup, order, _p50, _p99, closed = fields
        assert (int(rows), int(lost), int(dup), int(order), closed) == (RATE * SECONDS, 0, 0, 0, "True")
    verdict = json.loads(lines[-1].removeprefix("BENCH "))["verdict"]
    assert verdict == "nothing lost, doubled or out of order"
