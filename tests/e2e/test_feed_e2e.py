"""The live feed in Debian's Chromium: rows arrive in order in each agent's spelling while events
are being appended, the socket drops and the feed resumes with nothing missing or doubled, and a
<script> inside an event payload stays text."""

import threading
import time
import uuid

import pytest
from playwright.sync_api import expect

from tests.e2e.feed_page import log, ndjson, post, wait_state

pytestmark = pytest.mark.e2e

ROWS = "#feed-rows .feed-row"
SURFACES = [
    ("root", "typescript", "gg.files", "readFile"),
    ("agent-py", "python", "gg.files", "read_file"),
    ("agent-rs", "rust", "gg::files", "read_file"),
    ("agent-java", "java", "gg.files.Files", "readFile"),
]
SPELLED = {"root": "gg.files.readFile", "agent-py": "gg.files.read_file", "agent-rs": "gg::files::read_file",
           "agent-java": "gg.files.Files.readFile"}


def rendered(page):
    return [tuple(row) for row in page.eval_on_selector_all(
        ROWS, "els => els.map(e => [Number(e.dataset.seq), e.dataset.agent, e.querySelector('.feed-detail').textContent])"
    )]


def wait_rows(page, n, timeout=30_000):
    page.wait_for_function("n => document.querySelectorAll('#feed-rows .feed-row').length >= n", arg=n, timeout=timeout)


def test_live_feed_in_order_spelled_resumes_after_a_drop_and_escapes(page, console_server):
    name = f"e2e-feed-{uuid.uuid4().hex[:8]}"
    surfaces = [{"agentId": a, "type": "agent_surface", "executionMode": "responses_as_code", "tools": [],
                 "programLanguage": lang, "apis": [{"module": "files", "path": path, "description": "d",
                                                    "functions": [{"name": fn, "operation": "files.read_file"}]}]}
                for a, lang, path, fn in SURFACES]
    pk = post(console_server, name, surfaces + [log("opening")])["run"]
    expected = [(5, "root", "opening")]  # the surfaces (seq 1-4) make no rows

    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "live")

    # Appended while the page is open, in small bursts from another thread.
    bursts = []
    for b in range(5):
        burst = []
        for agent, *_ in SURFACES:
            burst += [{"agentId": agent, "type": "api_call", "operation": "files.read_file"}, log(f"b{b} {agent}", agent)]
        bursts.append(burst)
    seq = 5
    for burst in bursts:
        for record in burst:
            seq += 1
            agent = record["agentId"]
            expected.append((seq, agent, SPELLED[agent] if record["type"] == "api_call" else record["message"]))

    def produce():
        for burst in bursts:
            post(console_server, pk, burst)
            time.sleep(0.15)

    producer = threading.Thread(target=produce)
    producer.start()
    wait_rows(page, len(expected))
    producer.join()
    assert rendered(page) == expected

    # Pause holds new rows back; resume shows them.
    page.click("#feed-pause")
    post(console_server, pk, [log("held 1"), log("held 2")])
    expected += [(seq + 1, "root", "held 1"), (seq + 2, "root", "held 2")]
    seq += 2
    wait_rows(page, len(expected))
    assert page.locator(f"{ROWS}:visible").count() == len(expected) - 2
    assert page.inner_text("#feed-pause") == "Resume (2 new)"
    page.click("#feed-pause")
    assert page.locator(f"{ROWS}:visible").count() == len(expected)

    # Filter by agent, then by kind: the server filters, the filter is in the URL.
    with page.expect_navigation():
        page.select_option("#feed-agent", "agent-rs")
    wait_state(page, "live")
    assert "agent=agent-rs" in page.url
    assert {r for r in page.eval_on_selector_all(ROWS, "els => els.map(e => e.dataset.agent)")} == {"agent-rs"}
    with page.expect_navigation():
        page.select_option("#feed-kind", "call")
    wait_state(page, "live")
    assert page.eval_on_selector_all(f"{ROWS} .feed-detail", "els => els.map(e => e.textContent)") == \
        ["gg::files::read_file"] * 5
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "live")
    assert rendered(page) == expected

    # Autoscroll: stops while the operator reads further up, resumes once back at the bottom.
    at_bottom = "() => { const r = document.getElementById('feed-rows'); return r.scrollHeight - r.scrollTop - r.clientHeight < 2; }"
    assert page.evaluate(at_bottom)
    page.evaluate("document.getElementById('feed-rows').scrollTop = 0")
    post(console_server, pk, [log("scrolled 1"), log("scrolled 2")])
    expected += [(seq + 1, "root", "scrolled 1"), (seq + 2, "root", "scrolled 2")]
    seq += 2
    wait_rows(page, len(expected))
    assert page.evaluate("document.getElementById('feed-rows').scrollTop") == 0
    page.evaluate("const r = document.getElementById('feed-rows'); r.scrollTop = r.scrollHeight")
    post(console_server, pk, [log("bottom 1"), log("bottom 2")])
    expected += [(seq + 1, "root", "bottom 1"), (seq + 2, "root", "bottom 2")]
    seq += 2
    wait_rows(page, len(expected))
    assert page.evaluate(at_bottom)

    # Drop the socket: the server goes away, events are stored meanwhile, the feed resumes.
    console_server.stop()
    wait_state(page, "reconnecting")
    console_server.manage("ingest", "-", "--run", name, input=ndjson([log("while down 1"), log("while down 2")]))
    expected += [(seq + 1, "root", "while down 1"), (seq + 2, "root", "while down 2")]
    seq += 2
    console_server.start()
    wait_state(page, "live", timeout=60_000)
    post(console_server, pk, [log("after the drop")])
    expected.append((seq + 1, "root", "after the drop"))
    seq += 1
    wait_rows(page, len(expected))
    assert rendered(page) == expected  # nothing missing, nothing doubled, in order

    # A payload holding markup is shown as text and never runs.
    post(console_server, pk, [log("<script>window.__pwned = 1</script>"),
                              {"type": "assistant_message", "text": "<img src=x onerror=\"window.__pwned = 2\">"}])
    wait_rows(page, len(expected) + 2)
    details = page.eval_on_selector_all(f"{ROWS} .feed-detail", "els => els.slice(-2).map(e => e.textContent)")
    assert details == ["<script>window.__pwned = 1</script>", "<img src=x onerror=\"window.__pwned = 2\">"]
    assert page.locator("#feed-rows script, #feed-rows img").count() == 0
    assert page.evaluate("window.__pwned") is None

    # The run ends: everything is shown, the indicator says so and stays so.
    post(console_server, pk, [{"type": "session_ended", "status": "completed"}])
    wait_state(page, "ended")
    expect(page.locator(f"{ROWS}:last-child .feed-detail")).to_have_text("Session ended: completed.")
    assert "every stored record has been read" in page.inner_text("#feed-end")
    assert page.errors == []


def test_a_first_read_the_server_fails_is_tried_again_and_the_feed_goes_live(page, console_server):
    pk = post(console_server, f"e2e-retry-{uuid.uuid4().hex[:8]}", [log("before the failure")])["run"]
    failed = []

    def fail_once(route):
        if failed:
            return route.continue_()
        failed.append(route.request.url)
        route.fulfill(status=500, content_type="text/html", body="<h1>Server Error (500)</h1>")

    page.route("**/feed/rows*", fail_once)
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    page.wait_for_function("document.getElementById('feed-note').textContent.includes('Trying again')")
    assert page.inner_text("#feed-note") == "Reading rows failed: the server answered 500 Internal Server Error. Trying again in 2 s."
    assert page.locator(ROWS).count() == 0
    wait_state(page, "live")  # the second read filled the window and opened the socket
    assert page.inner_text("#feed-note") == ""
    post(console_server, pk, [log("after the retry")])
    wait_rows(page, 2)
    assert [r[2] for r in rendered(page)] == ["before the failure", "after the retry"]
    assert len(failed) == 1 and page.errors == []


def test_an_address_jumping_nowhere_says_why_and_opens_the_feed_at_its_end(page, console_server):
    stored = ["one", "two"]
    pk = post(console_server, f"e2e-nowhere-{uuid.uuid4().hex[:8]}", [log(text) for text in stored])["run"]
    for jump, why in (("turn=999", "This run has no turn 999."),
                      ("time=garbage", "A time is HH:MM[:SS] on the run's first day or a stamp such as")):
        page.goto(f"{console_server.url}/runs/{pk}/feed/?{jump}")
        wait_state(page, "live")  # the end read, the socket open
        wait_rows(page, len(stored))
        assert why in page.inner_text("#feed-note") and page.inner_text("#feed-note").endswith(
            "Showing the end of the run.")
        assert [r[2] for r in rendered(page)] == stored
        post(console_server, pk, [log(jump)])  # and it follows the tail
        stored.append(jump)
        expect(page.locator("#feed-rows .feed-row:last-child .feed-detail")).to_have_text(jump)


def test_a_stale_run_says_so_on_the_feed_indicator_until_a_record_arrives(page, console_server):
    started = {"agentId": "root", "type": "session_started"}
    pk = post(console_server, f"e2e-stale-{uuid.uuid4().hex[:8]}", [started, log("before the silence")])["run"]
    # Nothing arrived for an hour: the header reads "stale" and the open socket is not "live".
    console_server.manage("shell", "-c", (
        "from datetime import timedelta; from django.utils import timezone; from runs.models import Event, Run; "
        f"hour = timezone.now() - timedelta(hours=1); Run.objects.filter(pk={pk}).update(created_at=hour); "
        f"Event.objects.filter(run_id={pk}).update(received_at=hour)"))
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "stale")
    assert page.inner_text("#run-status") == "stale"
    assert page.inner_text("#feed-state") == "connected — no record for a while"

    post(console_server, pk, [log("after the silence")])
    wait_state(page, "live")
    assert page.inner_text("#run-status") == "running"
    expect(page.locator("#feed-rows .feed-row:last-child .feed-detail")).to_have_text("after the silence")


def test_a_live_runs_controls_and_counts_follow_what_arrives(page, console_server):
    """The agent list, the failure classes and the footer were the page's first reading: a run
    launched and watched from its start offered "all agents" only and read "0 of 0 records"."""
    pk = post(console_server, f"e2e-controls-{uuid.uuid4().hex[:8]}", [log("opening")])["run"]
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "live")
    expect(page.locator("#feed-count")).to_contain_text("of the run's 1 stored record.")
    assert page.locator("#feed-failure").is_hidden()

    post(console_server, pk, [log("hello", "agent-7"),
                              {"agentId": "agent-7", "type": "tool_result", "name": "shell", "ok": False,
                               "failure": "timeout"}])
    expect(page.locator("#feed-count")).to_contain_text("of the run's 3 stored records.")
    expect(page.locator("#feed-agent option[value='agent-7']")).to_have_count(1)
    expect(page.locator("#feed-failure")).to_be_visible()
    page.select_option("#feed-agent", "agent-7")  # the replaced list still applies a choice
    page.wait_for_url(lambda url: "agent=agent-7" in url)
    wait_rows(page, 2)
    assert {agent for _, agent, _ in rendered(page)} == {"agent-7"}
