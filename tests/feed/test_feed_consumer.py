"""FeedConsumer through the real Channels stack (gg_console.asgi.application): origin check,
session auth, backlog in bounded batches, doorbell-driven follow, resume with ?after=."""

import asyncio
import re
import threading

import pytest
from asgiref.sync import sync_to_async
from channels.layers import get_channel_layer
from channels.testing import WebsocketCommunicator

from gg_console.asgi import application
from runs.feed import consumer as consumers
from runs.feed import doorbell
from runs.feed.doorbell import group_name
from runs.feed.windows import BATCH
from runs.ingest.writer import append
from tests.feed_helpers import (  # noqa: F401
    ORIGIN, connect, cookie, cursor, logs, new_run, receive, receive_seqs, seqs, store)

pytestmark = [pytest.mark.asyncio, pytest.mark.django_db(transaction=True)]


async def test_anonymous_user_is_refused():
    run = await new_run()
    comm, connected = await connect(run, cookie=None)
    assert not connected


async def test_foreign_origin_is_refused(cookie):
    run = await new_run()
    comm, connected = await connect(run, cookie, origin=(b"origin", b"http://evil.example"))
    assert not connected
    comm, connected = await connect(run, cookie, origin=None)  # no Origin header at all
    assert not connected


async def test_unknown_run_is_refused(cookie):
    comm = WebsocketCommunicator(application, "/ws/runs/999999/feed/", headers=[ORIGIN, cookie])
    connected, _ = await comm.connect()
    assert not connected


async def test_backlog_arrives_in_order_in_bounded_batches(cookie):
    last = 2 * BATCH + 50
    run = await new_run(logs(*(f"line {i}" for i in range(1, last + 1))))
    comm, connected = await connect(run, cookie)
    assert connected
    batches = [await receive(comm) for _ in range(3)]
    assert [len(seqs(b)) for b in batches] == [BATCH, BATCH, 50]
    assert [s for b in batches for s in seqs(b)] == list(range(1, last + 1))
    assert [cursor(b) for b in batches] == [BATCH, 2 * BATCH, last]
    assert await comm.receive_nothing(timeout=0.3)  # the run is live: nothing more, no close
    await comm.disconnect()


async def test_follows_new_events_and_resumes_after_without_gap_or_duplicate(cookie):
    run = await new_run(logs(*(f"old {i}" for i in range(1, 11))))
    comm, _ = await connect(run, cookie, after=6)
    assert await receive_seqs(comm, 4) == [7, 8, 9, 10]
    await store(run, logs("new 11", "new 12"))
    assert await receive_seqs(comm, 2) == [11, 12]
    await comm.disconnect()

    # A browser that rendered up to 12 reconnects while two more were stored meanwhile.
    await store(run, logs("new 13", "new 14"))
    comm, _ = await connect(run, cookie, after=12)
    assert await receive_seqs(comm, 2) == [13, 14]
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_lost_doorbell_loses_nothing_and_a_repeated_one_sends_nothing_twice(cookie, monkeypatch):
    run = await new_run(logs("first"))
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 1) == [1]

    monkeypatch.setattr(doorbell, "ring", lambda *a, **k: None)  # the channel layer drops these
    await store(run, logs("a", "b", "c"))
    assert await comm.receive_nothing(timeout=0.3)

    layer = get_channel_layer()
    await layer.group_send(group_name(run.pk), {"type": "run.event", "seq": 2})  # coalesced: names only seq 2
    assert await receive_seqs(comm, 3) == [2, 3, 4]
    await layer.group_send(group_name(run.pk), {"type": "run.event", "seq": 4})
    await layer.group_send(group_name(run.pk), {"type": "run.event", "seq": 4})
    assert await comm.receive_nothing(timeout=0.3)
    await comm.disconnect()


async def test_a_write_does_not_wait_for_the_sockets_loop_to_send_its_doorbell(cookie):
    run = await new_run(logs("first"))
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 1) == [1]
    stored = threading.Event()

    def write():  # as a POST's view, on a thread the server's loop awaits
        append(run, logs("second"))
        stored.set()

    writing = asyncio.ensure_future(sync_to_async(write, thread_sensitive=False)())
    await asyncio.sleep(0)  # the write's thread is under way
    # The loop is busy (here: blocked) meanwhile. The write returns all the same, its doorbell
    # handed to the loop, which sends it once free: the socket gets the row.
    assert stored.wait(10)
    await writing
    assert await receive_seqs(comm, 1) == [2]
    await comm.disconnect()


def write_in_a_thread_of_its_own(run, records):
    """As a launched run writes in the embedded server: a plain thread, no event loop of its own."""
    thread = threading.Thread(target=append, args=(run, records))
    thread.start()
    return thread


async def test_a_doorbell_rung_from_a_thread_of_no_loop_reaches_the_socket_at_once(cookie):
    run = await new_run(logs("first"))
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 1) == [1]
    thread = write_in_a_thread_of_its_own(run, logs("second"))
    await asyncio.to_thread(thread.join, 10)
    # Handed to the socket's loop (not sent on a loop built for the doorbell, which woke the
    # socket's waiter without waking its loop): here within a pass, not at the next heartbeat.
    assert seqs(await comm.receive_from(timeout=1)) == [2]
    await comm.disconnect()


async def test_heartbeat_while_idle_and_an_idle_pass_reads_unannounced_events(cookie, monkeypatch):
    monkeypatch.setattr(consumers.FeedConsumer, "heartbeat_seconds", 0.2)
    run = await new_run()
    comm, _ = await connect(run, cookie)
    assert await comm.receive_from(timeout=2) == consumers.HEARTBEAT_HTML
    monkeypatch.setattr(doorbell, "ring", lambda *a, **k: None)  # a writer whose doorbell never arrives
    await store(run, logs("unannounced"))
    assert await receive_seqs(comm, 1) == [1]
    await comm.disconnect()


async def test_clean_close_once_the_run_has_ended_and_everything_is_sent(cookie):
    run = await new_run(logs("one", "two") + [{"type": "session_ended", "status": "completed"}])
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 3) == [1, 2, 3]
    assert 'id="feed-end"' in await receive(comm)
    assert await comm.receive_output(timeout=5) == {"type": "websocket.close", "code": 1000}


async def test_live_run_that_ends_closes_after_its_last_event(cookie):
    run = await new_run(logs("one"))
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 1) == [1]
    await store(run, [{"type": "session_ended", "status": "canceled"}])
    assert await receive_seqs(comm, 1) == [2]
    assert 'data-ended="1"' in await receive(comm)
    assert (await comm.receive_output(timeout=5))["type"] == "websocket.close"


SURFACES = {
    # agent: (language, apis as the agent reported them)
    "root": ("typescript", [{"module": "files", "path": "gg.files", "description": "d", "functions": [
        {"name": "readFile", "operation": "files.read_file"},
        {"name": "read", "operation": "files.read_file"},  # alias: the first binding wins
    ]}]),
    "agent-py": ("python", [{"module": "files", "path": "gg.files", "description": "d",
                             "functions": [{"name": "read_file", "operation": "files.read_file"}]}]),
    "agent-rs": ("rust", [{"module": "files", "path": "gg::files", "description": "d",
                           "functions": [{"name": "read_file", "operation": "files.read_file"}]}]),
    "agent-java": ("java", [{"module": "files", "path": "gg.files.Files", "description": "d",
                             "functions": [{"name": "readFile", "operation": "files.read_file"}]}]),
    "agent-rb": ("ruby", None),  # reported a language but no apis: the catalogue's spelling
}


def surface_records():
    out = []
    for agent, (language, apis) in SURFACES.items():
        surface = {"agentId": agent, "type": "agent_surface", "executionMode": "responses_as_code", "tools": [],
                   "programLanguage": language}
        if apis is not None:
            surface["apis"] = apis
        out.append(surface)
    return out


async def test_calls_are_spelled_as_each_agent_wrote_them(cookie):
    records = surface_records()
    for agent in SURFACES:
        records += [{"agentId": agent, "type": "api_call", "operation": "files.read_file"},
                    {"agentId": agent, "type": "api_result", "operation": "files.read_file", "ok": True}]
    records += [
        {"agentId": "agent-py", "type": "api_call", "operation": "files.read_file"},
        {"agentId": "agent-py", "type": "api_result", "operation": "files.read_file", "ok": False, "failure": "not-found"},
        {"agentId": "agent-rs", "type": "api_call", "operation": "mystery.do_thing"},  # not in its surface
        {"agentId": "agent-new", "type": "api_call", "operation": "files.read_file"},  # nothing known about it
        # A legacy stream: {object, function}, the program call bridged as a tool pair inside the bracket.
        {"agentId": "agent-old", "type": "api_call", "object": "fs", "function": "read_file"},
        {"agentId": "agent-old", "type": "tool_call", "name": "read_file", "args": {"path": "a"}},
        {"agentId": "agent-old", "type": "tool_result", "name": "read_file", "ok": True},
        {"agentId": "agent-old", "type": "api_result", "object": "fs", "function": "read_file", "ok": True},
        {"agentId": "agent-old", "type": "tool_call", "name": "shell", "args": {"command": "ls"}},  # outside: shown
    ]
    run = await new_run(records)
    comm, _ = await connect(run, cookie)
    html = ""
    while "agent-old" not in html or html.count('data-kind="tool"') < 1:
        html += await receive(comm)
    rows = re.findall(r'data-agent="([^"]+)" data-kind="(?!raw")[^"]+"[^>]*>.*?feed-label">([^<]+)</span>.*?'
                      r'feed-detail[^"]*">([^<]*)</span>(?:\s*<span class="feed-failure">([^<]+)</span>)?', html, re.S)
    assert [(a, label, detail, failure) for a, label, detail, failure in rows] == [
        ("root", "CALL", "gg.files.readFile", ""), ("root", "RESULT", "gg.files.readFile", ""),
        ("agent-py", "CALL", "gg.files.read_file", ""), ("agent-py", "RESULT", "gg.files.read_file", ""),
        ("agent-rs", "CALL", "gg::files::read_file", ""), ("agent-rs", "RESULT", "gg::files::read_file", ""),
        ("agent-java", "CALL", "gg.files.Files.readFile", ""), ("agent-java", "RESULT", "gg.files.Files.readFile", ""),
        ("agent-rb", "CALL", "GG::Files.read_file", ""), ("agent-rb", "RESULT", "GG::Files.read_file", ""),
        ("agent-py", "CALL", "gg.files.read_file", ""), ("agent-py", "RESULT ✗", "gg.files.read_file", "not-found"),
        ("agent-rs", "CALL", "mystery.do_thing", ""),
        ("agent-new", "CALL", "files.read_file", ""),
        ("agent-old", "CALL", "fs.read_file", ""), ("agent-old", "RESULT", "fs.read_file", ""),
        ("agent-old", "TOOL", "shell", ""),
    ]
    # A multi-agent run: every row names its agent and links to it.
    assert f'href="/runs/{run.pk}/agents/agent-java/"' in html
    await comm.disconnect()


async def test_surface_reported_after_connect_is_picked_up(cookie):
    run = await new_run([{"agentId": "root", "type": "turn_started"}])
    comm, _ = await connect(run, cookie)
    assert await receive_seqs(comm, 1) == [1]
    await store(run, surface_records()[:1] + [{"agentId": "root", "type": "api_call", "operation": "files.read_file"}])
    message = await receive(comm)
    assert "gg.files.readFile" in message


async def test_event_payloads_are_escaped(cookie):
    run = await new_run(logs('<script>window.pwned = 1</script>') + [
        {"type": "tool_call", "name": "write_file", "args": {"contents": "<img src=x onerror=alert(1)>"}},
        {"type": "assistant_message", "text": "<b>bold</b> & \"quoted\""},
    ])
    comm, _ = await connect(run, cookie)
    html = await receive(comm)
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in html
    assert "<script" not in html and "<img" not in html and "<b>" not in html
    await comm.disconnect()


async def test_hostile_attribute_values_are_escaped_and_an_unlinkable_agent_keeps_the_feed_going(cookie):
    # Every field a row puts in an attribute (agent, its link, the timestamp) or in text (label,
    # detail, arguments, failure class) carries markup; an agent id no URL can name (a newline)
    # is shown without a link rather than breaking the feed.
    hostile = '"><script>window.pwned=1</script>'
    run = await new_run([
        {"agentId": "root", "type": "turn_started", "timestamp": f"2026-08-03T00:00:00Z{hostile}"},
        {"agentId": f"a'{hostile}", "type": "tool_call", "name": hostile, "args": {"x": hostile}},
        {"agentId": f"a'{hostile}", "type": "tool_result", "name": hostile, "ok": False,
         "failure": hostile, "summary": hostile},
        {"agentId": "line\nbreak", "type": "log", "level": hostile, "message": hostile},
        {"agentId": "root", "type": "log", "level": "info", "message": "after"},
    ])
    comm, _ = await connect(run, cookie)
    html = ""
    while "after" not in html:
        html += await receive(comm)
    assert seqs(html) == [1, 2, 3, 4, 5]
    assert "<script" not in html
    assert 'title="2026-08-03T00:00:00Z&quot;&gt;&lt;script&gt;window.pwned=1&lt;/script&gt;"' in html
    assert "data-agent=\"a&#x27;&quot;&gt;&lt;script&gt;" in html
    assert f'href="/runs/{run.pk}/agents/a&#x27;%22%3E%3Cscript%3Ewindow.pwned=1%3C/script%3E/"' in html
    assert '<span class="feed-agent tag">line\nbreak</span>' in html  # named, not linked
    await comm.disconnect()


async def test_a_doorbell_with_no_one_on_the_run_is_not_sent_and_one_with_a_listener_is():
    layer = get_channel_layer()
    run = await new_run()
    sent = []
    real_send = layer.group_send

    async def group_send(group, message):
        sent.append(group)
        await real_send(group, message)

    layer.group_send = group_send
    try:
        # From a thread of no loop, as `manage.py ingest` writes: no socket of this process is on
        # the run, so no loop is built to send to no one.
        await asyncio.to_thread(doorbell.ring, run.pk, 1)
        assert sent == []
        channel = await layer.new_channel()
        await layer.group_add(group_name(run.pk), channel)
        await asyncio.to_thread(doorbell.ring, run.pk, 2)
        assert sent == [group_name(run.pk)]
        assert await asyncio.wait_for(layer.receive(channel), 2) == doorbell.message(2)
        await layer.group_discard(group_name(run.pk), channel)
    finally:
        del layer.group_send
