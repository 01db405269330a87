"""Many sockets on one run share the work: a window of rows is read from the database and rendered
once per process, and every connection at that cursor gets the same message. Through the real
Channels stack (gg_console.asgi.application)."""

import asyncio
import re
import threading

import pytest
from channels.layers import get_channel_layer
from django.db.backends.utils import CursorWrapper

from runs import consumers, doorbell
from runs.doorbell import group_name
from tests.feed_helpers import connect, cookie, logs, new_run, receive_seqs, seqs, store  # noqa: F401

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]

CONNECTIONS = 12


@pytest.fixture
def queries(monkeypatch):
    """Every SQL statement run, from any thread (the consumers read on Channels' database thread)."""
    seen, lock = [], threading.Lock()
    execute = CursorWrapper._execute

    def counted(self, sql, *args, **kwargs):
        with lock:
            seen.append(sql)
        return execute(self, sql, *args, **kwargs)

    monkeypatch.setattr(CursorWrapper, "_execute", counted)
    return seen


def event_reads(sqls):
    return [q for q in sqls if re.search(r'FROM "runs_event"', q)]


@pytest.fixture(autouse=True)
def fresh_windows(monkeypatch):
    # Each test starts with nothing kept: what it counts is its own reads.
    monkeypatch.setattr(consumers, "WINDOWS", consumers.Windows())


async def test_connections_at_one_cursor_share_one_read_per_window(cookie, queries, monkeypatch):
    run = await new_run(logs(*(f"old {i}" for i in range(1, 6)), agent="root") + logs("spawned", agent="agent-1"))
    comms = []
    for _ in range(CONNECTIONS):
        comm, connected = await connect(run, cookie)
        assert connected
        assert await receive_seqs(comm, 6) == [1, 2, 3, 4, 5, 6]
        comms.append(comm)

    # Stored unannounced, then one doorbell for all of them: every connection is at seq 6.
    monkeypatch.setattr(doorbell, "ring", lambda *a, **k: None)
    await store(run, logs(*(f"new {i}" for i in range(7, 31)), agent="agent-1"))
    del queries[:]
    await get_channel_layer().group_send(group_name(run.pk), {"type": "run.event", "seq": 30})
    messages = [await comm.receive_from(timeout=5) for comm in comms]

    assert seqs(messages[0]) == list(range(7, 31))
    assert all(m == messages[0] for m in messages)  # the same rendering, byte for byte
    assert 'href="/runs/%d/agents/agent-1/"' % run.pk in messages[0]
    # One read of the window for all of them: the run's status, then its events (the state at
    # seq 6 is the end of the window before, kept; no agent, surface or bracket is read again).
    assert len(event_reads(queries)) == 1
    assert len(queries) == 2
    for comm in comms:
        assert await comm.receive_nothing(timeout=0.1)
        await comm.disconnect()


async def test_a_connection_at_another_cursor_gets_exactly_its_own_rows(cookie, queries):
    run = await new_run(logs(*(f"line {i}" for i in range(1, 21))))
    together = [(await connect(run, cookie, after=10))[0] for _ in range(3)]
    behind, _ = await connect(run, cookie, after=4)
    ahead, _ = await connect(run, cookie, after=18)

    got = await asyncio.gather(*(receive_seqs(c, 10) for c in together), receive_seqs(behind, 16),
                               receive_seqs(ahead, 2))
    assert got == [list(range(11, 21))] * 3 + [list(range(5, 21)), [19, 20]]

    await store(run, logs("line 21", "line 22"))
    for comm in together + [behind, ahead]:
        assert await receive_seqs(comm, 2) == [21, 22]
        assert await comm.receive_nothing(timeout=0.1)
        await comm.disconnect()


async def test_a_backlog_window_is_read_once_for_every_connection_that_resumes_into_it(cookie, queries):
    run = await new_run(logs(*(f"line {i}" for i in range(1, 451))))
    first, _ = await connect(run, cookie)
    backlog = [await first.receive_from(timeout=5) for _ in range(3)]
    reads = len(event_reads(queries))

    # Later connections from the start get the same full windows, without reading them again
    # (only the last, short window is read afresh: more may have been stored since).
    for _ in range(3):
        comm, _ = await connect(run, cookie)
        assert [await comm.receive_from(timeout=5) for _ in range(3)] == backlog
        await comm.disconnect()
    assert len(event_reads(queries)) == reads + 3
    assert [s for m in backlog for s in seqs(m)] == list(range(1, 451))
    await first.disconnect()
