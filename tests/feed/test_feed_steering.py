"""The tail socket as the windowed page drives it: a filter applied by the server, acknowledged
messages (a busy page is never flooded), follow/detach with an epoch marker, a socket without rows
for the header of other tabs, and an ending that says how the run ended."""

import json

import pytest

from runs.feed import consumer as consumers
from runs.ingest import deletion, services
from tests.feed_helpers import connect, cookie, cursor, logs, new_run, receive, receive_seqs, seqs, store  # noqa: F401

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def open_socket(run, cookie, query):
    from channels.testing import WebsocketCommunicator

    from gg_console.asgi import application
    from tests.feed_helpers import ORIGIN

    comm = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/feed/?{query}", headers=[ORIGIN, cookie])
    connected, _ = await comm.connect()
    assert connected
    return comm


async def test_the_server_filters_the_live_tail(cookie):
    run = await new_run(logs("old"))
    comm = await open_socket(run, cookie, "after=1&agent=helper&q=kiwi")
    await store(run, logs("kiwi one", "no fruit", agent="helper") + logs("kiwi root") + logs("more KIWI", agent="helper"))
    got = []
    while not got or cursor(message) < 5:
        message = await receive(comm)
        got += seqs(message)
    assert got == [2, 5]
    await comm.disconnect()


async def test_the_live_tail_keeps_one_failure_class(cookie):
    """A failure class keeps the failed results that name it (unclassified: those naming none); an
    error log, a failed program or a result of another class is not one."""
    run = await new_run(logs("old"))
    comm = await open_socket(run, cookie, "after=1&failure=unclassified")
    result = {"type": "tool_result", "name": "shell", "ok": False}
    await store(run, [{**result, "failure": "timeout"}, result, {"type": "log", "level": "error", "message": "x"},
                      {"type": "code_execution", "ok": False}, {**result, "ok": True},
                      {"type": "api_result", "operation": "files.read_file", "ok": False}])
    assert await receive_seqs(comm, 2) == [3, 7]  # a row kept wrongly would come between them
    await comm.disconnect()


async def test_a_socket_has_at_most_two_messages_in_flight_until_acknowledged(cookie, monkeypatch):
    """A client that never reads (or never acknowledges) holds the server to two messages of rows:
    the rest waits in the database, not in a send buffer growing with the run."""
    monkeypatch.setattr(consumers.FeedConsumer, "pass_seconds", 0)
    run = await new_run(logs(*[f"m{i}" for i in range(consumers.BATCH * 5)]))
    comm = await open_socket(run, cookie, "after=0")
    first = await comm.receive_from(timeout=5)
    second = await comm.receive_from(timeout=5)
    assert await comm.receive_nothing(timeout=0.5)  # two in flight: the rest waits in the database
    await comm.send_to(text_data=json.dumps({"ack": cursor(first)}))
    third = await comm.receive_from(timeout=5)
    assert await comm.receive_nothing(timeout=0.5)
    await comm.send_to(text_data=json.dumps({"ack": cursor(second)}))
    fourth = await comm.receive_from(timeout=5)
    assert [cursor(m) for m in (first, second, third, fourth)] == [consumers.BATCH * k for k in (1, 2, 3, 4)]
    await comm.disconnect()


async def test_detach_sends_no_rows_and_follow_resumes_from_the_seq_asked(cookie):
    run = await new_run(logs("one", "two"))
    comm = await open_socket(run, cookie, "after=2")
    await comm.send_to(text_data=json.dumps({"follow": False, "epoch": 1}))
    assert 'id="feed-follow" data-epoch="1"' in await receive(comm)
    await store(run, logs("three", "four"))
    assert await receive(comm) == consumers.announce_html(4)  # news, no rows
    await comm.send_to(text_data=json.dumps({"follow": 1, "epoch": 2}))
    assert 'data-epoch="2"' in await receive(comm)
    assert await receive_seqs(comm, 3) == [2, 3, 4]
    await comm.send_to(text_data="not json")  # ignored
    await comm.send_to(text_data=json.dumps({"follow": "x", "epoch": 3}))  # ignored
    # A message longer than any steering is not read (a 1 MiB one took the event loop ~5 ms to parse).
    await comm.send_to(text_data=json.dumps({"follow": False, "epoch": 4, "pad": " " * 256}))
    assert await comm.receive_nothing(timeout=0.5)  # read, it would be answered with its epoch's marker
    await store(run, logs("five"))
    assert await receive_seqs(comm, 1) == [5]
    await comm.disconnect()


async def test_a_socket_without_rows_announces_the_run_moving_and_its_end(cookie):
    run = await new_run(logs("one"))
    comm = await open_socket(run, cookie, "rows=0")
    assert await receive(comm) == consumers.announce_html(1)
    await store(run, logs("two") + [{"type": "session_ended", "status": "completed"}])
    message = await receive(comm)
    if message.startswith("<span"):
        message = await receive(comm)
    assert 'data-status="completed"' in message and "The run has ended (completed)" in message
    assert (await comm.receive_output(timeout=5))["type"] == "websocket.close"


async def test_an_interrupted_run_ends_the_feed_with_its_reason(cookie):
    from channels.db import database_sync_to_async

    run = await new_run(logs("one"))
    comm = await open_socket(run, cookie, "after=0")
    assert await receive_seqs(comm, 1) == [1]
    assert await database_sync_to_async(services.run_mark_ended)(run, by="alice")
    message = await receive(comm)
    assert 'data-status="interrupted" data-reason="marked ended by alice"' in message
    assert "(interrupted: marked ended by alice)" in message


async def test_a_deleted_run_ends_its_feed(cookie):
    from channels.db import database_sync_to_async

    run = await new_run(logs("one"))
    comm = await open_socket(run, cookie, "after=0")
    assert await receive_seqs(comm, 1) == [1]
    await database_sync_to_async(deletion.run_delete)(run)
    assert 'data-status="deleted"' in await receive(comm)
