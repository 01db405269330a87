"""What the live benches (bench/feed, bench/scale) share: Daphne processes on free ports, an
operator's logged-in session with an ingest token, WebSocket clients that record each row's seq and
arrival, and percentiles."""

import asyncio
import os
import re
import resource
import socket
import subprocess
import sys
import time
from array import array
from itertools import repeat
from pathlib import Path

from _common import REPO

# Only the seq of each row is parsed (the clients share the machine with Daphne; they must stay
# cheap): a bench reads one row per event (its own log lines, or every record with kind=raw).
ROW = re.compile(r'class="feed-row[^"]*" data-seq="(\d+)"')
CURSOR = re.compile(r'id="feed-cursor" hx-swap-oob="true" data-seq="(\d+)"')


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_daphne(port, env, log_name="daphne.log"):
    """A Daphne serving the console on `port` with `env`, once it listens (its log in GG_CONSOLE_VAR)."""
    log = open(Path(env["GG_CONSOLE_VAR"]) / log_name, "ab")
    process = subprocess.Popen(
        [str(Path(sys.executable).with_name("daphne")), "-b", "127.0.0.1", "-p", str(port), "gg_console.asgi:application"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT,
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process
        except OSError:
            if process.poll() is not None:
                sys.exit(f"daphne exited; see {log.name}")
            time.sleep(0.1)
    sys.exit("daphne did not listen within 30 s")


def operator():
    """An operator's session key (what a logged-in browser sends) and an ingest token."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.auth.models import User
    from django.contrib.sessions.backends.db import SessionStore

    from runs.models import IngestToken

    user = User.objects.create_user("bench", password="bench-pass-123")
    session = SessionStore()
    session.update({SESSION_KEY: str(user.pk), BACKEND_SESSION_KEY: "django.contrib.auth.backends.ModelBackend",
                    HASH_SESSION_KEY: user.get_session_auth_hash()})
    session.create()
    token = IngestToken.objects.create(user=user, label="bench").key
    return session.session_key, token


class Client:
    def __init__(self):
        # Each row's seq and perf_counter at arrival, in arrival order, in arrays: millions of (seq,
        # stamp) tuples had this process's collector walk them all every few seconds, and rows
        # arriving during a walk were stamped up to 150 ms late.
        self.seqs = array("q")
        self.stamps = array("d")
        self.opened = asyncio.Event()
        self.closed = False
        self.error = ""

    @property
    def arrivals(self):
        """(seq, perf_counter at arrival) of each row, in arrival order."""
        return zip(self.seqs, self.stamps)

    async def follow(self, url, headers):
        import websockets

        try:
            async with websockets.connect(url, additional_headers=headers, max_size=None, open_timeout=60) as ws:
                self.opened.set()
                async for message in ws:
                    now = time.perf_counter()
                    seqs = ROW.findall(message)
                    self.seqs.extend(map(int, seqs))
                    self.stamps.extend(repeat(now, len(seqs)))
                    cursor = CURSOR.search(message)
                    if cursor:  # read: the server sends on (at most two messages of rows in flight)
                        try:
                            await ws.send(f'{{"ack": {cursor.group(1)}}}')
                        except websockets.ConnectionClosedOK:
                            pass  # the run ended and the server closed after its last rows: the loop ends
            self.closed = True
        except Exception as exc:  # noqa: BLE001 - reported per client, counted as lost rows
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.opened.set()


def cpu_seconds(pid):
    """User + system CPU time a process has used (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def percentile(values, p):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(round(p / 100 * (len(values) - 1))))]


