"""Many sockets on one run share the work: a window of rows is read from the database and rendered
once per process, and every connection at that cursor gets the same message. Through the real
Channels stack (gg_console.asgi.application)."""

import asyncio
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest
from channels.layers import get_channel_layer
from django.db import connection, connections
from django.db.backends.utils import CursorWrapper

from runs.feed import consumer as consumers
from runs.feed import doorbell
from runs.feed.doorbell import group_name
from tests.feed_helpers import connect, cookie, logs, new_run, receive, receive_seqs, seqs, store  # noqa: F401

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
    monkeypatch.setattr(consumers, "WINDOWS", consumers.WindowCache())


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
    messages = [await receive(comm) for comm in comms]

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
    last = 2 * consumers.BATCH + 50  # three windows
    run = await new_run(logs(*(f"line {i}" for i in range(1, last + 1))))
    first, _ = await connect(run, cookie)
    backlog = [await receive(first) for _ in range(3)]
    reads = len(event_reads(queries))

    # Later connections from the start get the same full windows, without reading them again
    # (only the last, short window is read afresh: more may have been stored since).
    for _ in range(3):
        comm, _ = await connect(run, cookie)
        assert [await receive(comm) for _ in range(3)] == backlog
        await comm.disconnect()
    assert len(event_reads(queries)) == reads + 3
    assert [s for m in backlog for s in seqs(m)] == list(range(1, last + 1))
    await first.disconnect()


async def test_a_short_window_kept_before_later_events_is_never_served_as_complete():
    run = await new_run(logs("a", "b", "c"))
    windows = consumers.WindowCache()
    window, settled = await windows.get(run.pk, 0)  # a poll: whatever is stored now
    assert (window.cursor, window.full, settled) == (3, False, True)
    await store(run, logs("d", "e"))
    # A reader whose doorbell announced seq 5 is not served the kept window ending at 3 ...
    window, settled = await windows.get(run.pk, 0, rung=5)
    assert (window.cursor, settled) == (5, True)
    # ... and one announced up to 5 is served the window now kept, without a read.
    assert await windows.get(run.pk, 0, rung=4) == (window, True)


async def test_a_read_under_way_before_an_event_was_stored_does_not_settle_a_reader_that_needs_it(monkeypatch):
    run = await new_run(logs("a"))
    windows = consumers.WindowCache()
    read, release = threading.Event(), threading.Event()
    real = consumers.read_window

    def slow(*args):
        out = real(*args)
        read.set()  # the database has answered; the event below is stored after that
        release.wait(10)
        return out

    monkeypatch.setattr(consumers, "read_window", slow)
    first = asyncio.ensure_future(windows.get(run.pk, 0))
    await asyncio.to_thread(read.wait, 10)
    await asyncio.to_thread(store.func, run, logs("b"))  # another thread: the database one is busy
    second = asyncio.ensure_future(windows.get(run.pk, 0, rung=2))  # joins the read under way
    await asyncio.sleep(0.05)
    release.set()
    assert (await first)[0].cursor == 1
    window, settled = await second
    assert (window.cursor, settled) == (1, False)  # the shared read ended before seq 2: ask again
    monkeypatch.setattr(consumers, "read_window", real)
    window, settled = await windows.get(run.pk, 0, rung=2)
    assert (window.cursor, settled) == (2, True)


async def test_the_shared_cache_keeps_a_bounded_number_of_windows_and_states():
    run = await new_run(logs(*(f"line {i}" for i in range(1, 41))))
    other = await new_run(logs("x"))
    windows = consumers.WindowCache(size=4)
    for after in range(40):  # forty windows of one event each, and another run between them
        window, _ = await windows.get(run.pk, after, limit=1)
        assert seqs(window.html) == [after + 1]
        await windows.get(other.pk, 0)
    assert len(windows.done) == len(windows.states) == 4 and not windows.reads


async def test_windows_of_different_runs_are_read_at_once(monkeypatch):
    # Each read waits until the other has begun: on one database thread for every socket the
    # second would begin only once the first had ended.
    runs = [await new_run(logs("a")), await new_run(logs("b"))]
    windows = consumers.WindowCache()
    both = threading.Barrier(2, timeout=10)
    real = consumers.read_window

    def meeting(*args):
        both.wait()
        return real(*args)

    monkeypatch.setattr(consumers, "read_window", meeting)
    got = await asyncio.gather(*(windows.get(run.pk, 0) for run in runs))
    assert [seqs(window.html) for window, _ in got] == [[1], [1]]


async def test_a_reader_thread_keeps_its_connection_and_replaces_one_gone_bad(monkeypatch):
    # One reader thread: every window below is read on it.
    readers = ThreadPoolExecutor(max_workers=1)
    monkeypatch.setattr(consumers, "READERS", readers)
    opened = []
    wrapper = type(connections["default"])  # the backend's, SQLite's or PostgreSQL's
    real_connect = wrapper.get_new_connection

    def counted(self, params):
        opened.append(threading.current_thread().name)
        return real_connect(self, params)

    run = await new_run(logs(*(f"line {i}" for i in range(1, 11))))
    monkeypatch.setattr(wrapper, "get_new_connection", counted)  # the readers' connections from here
    # The tests' database lives in memory, where Django ignores a close (it would lose the database):
    # here a close must close, as on a database file.
    monkeypatch.setattr(wrapper, "is_in_memory_db", lambda self: False, raising=False)
    windows = consumers.WindowCache()
    for after in range(10):
        window, _ = await windows.get(run.pk, after, limit=1)
        assert seqs(window.html) == [after + 1]
    assert len(opened) == 1  # opened by the first read, kept by the nine after it

    # The database closed under the kept connection: the next read opens another and answers.
    await asyncio.get_running_loop().run_in_executor(readers, lambda: connection.connection.close())
    window, _ = await consumers.WindowCache().get(run.pk, 0)
    assert seqs(window.html) == list(range(1, 11)) and len(opened) == 2
    await asyncio.get_running_loop().run_in_executor(readers, lambda: connection.close())
    readers.shutdown()
