"""The windowed feed in Debian's Chromium: a 100,000-event run keeps the feed's DOM bounded while
scrolling back, to the top and to the end again; a search finds a record by a word of its payload,
streams new matches live and opens the record; the header of a launched run goes
queued → running → completed with its counts while Cancel disappears; and a run cut off by a killed
server reads "interrupted", with its reason, once the server is back."""

import json
import os
import re
import time
import uuid

import pytest
from playwright.sync_api import expect

from tests.e2e.feed_page import log, post, wait_state

pytestmark = pytest.mark.e2e

ROWS = "#feed-rows .feed-row"
MAX_ROWS = 250
MAX_NODES = 5000  # the bench's budget for the DOM under the feed

BIG_RUN = """
from runs.ingest.writer import append
from runs.models import Run
run = Run.objects.create(name={name!r})
def records():
    yield {{"type": "session_started", "timestamp": "2026-08-03T00:00:00Z"}}
    for i in range(1, {n} - 1):
        yield {{"agentId": "agent-%d" % (i % 3), "timestamp": "2026-08-03T01:00:00.%06dZ" % i,
               "type": "log", "level": "info", "message": "line %d" % i}}
    yield {{"type": "session_ended", "status": "completed", "timestamp": "2026-08-03T02:00:00Z"}}
append(run, records())
print(run.pk)
"""

WINDOW = """() => {
  const feed = document.getElementById('feed'), rows = [...document.querySelectorAll('#feed-rows .feed-row')];
  const walker = document.createTreeWalker(feed);
  let nodes = 0;
  while (walker.nextNode()) nodes++;
  return {rows: rows.length, nodes, first: rows.length ? +rows[0].dataset.seq : null,
          last: rows.length ? +rows[rows.length - 1].dataset.seq : null, state: document.getElementById('feed-state').dataset.state};
}"""


SHOTS = os.environ.get("GG_SHOTS")  # a directory: the tests leave screenshots of what they saw there


def shot(page, name):
    if SHOTS:
        page.screenshot(path=os.path.join(SHOTS, f"{name}.png"))


def window(page):
    return page.evaluate(WINDOW)


def settled(page):
    page.wait_for_function("document.getElementById('feed-state').dataset.state !== 'loading'")


def scroll(page, to_top, before):
    js = "r => { r.scrollTop = %s; r.dispatchEvent(new Event('scroll')); }" % ("0" if to_top else "r.scrollHeight")
    page.eval_on_selector("#feed-rows", js)
    edge = "first" if to_top else "last"
    page.wait_for_function(
        "([edge, was]) => { const rows = document.querySelectorAll('#feed-rows .feed-row');"
        " const row = edge === 'first' ? rows[0] : rows[rows.length - 1]; return row && +row.dataset.seq !== was; }",
        arg=[edge, before[edge]], timeout=15_000)
    settled(page)
    return window(page)


def test_a_100k_event_run_keeps_the_feed_dom_bounded_scrolling_to_the_top_and_back(page, console_server):
    n = 100_000
    pk = int(console_server.manage("shell", "-c", BIG_RUN.format(name=f"e2e-big-{uuid.uuid4().hex[:6]}", n=n))
             .stdout.split()[-1])
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "ended")
    now = window(page)
    assert now["last"] == n and now["rows"] <= MAX_ROWS and now["nodes"] <= MAX_NODES
    assert page.inner_text("#feed-state") == "ended (completed)"
    # Rows are `content-visibility: auto`: a row just put in the window may not be laid out yet, and its
    # innerText reads "" until it is (the jump to the top failed so once in CI); its text is the same.
    expect(page.locator(f"{ROWS}:last-child .feed-detail")).to_have_text("Session ended: completed.")

    for _ in range(8):  # back through the history, page by page
        was = now
        now = scroll(page, True, now)
        assert now["first"] < was["first"] and now["rows"] <= MAX_ROWS and now["nodes"] <= MAX_NODES, now
    assert now["last"] < n  # the tail left the window: the window never grows

    page.fill("#feed-jump-to", "1")  # the top
    page.press("#feed-jump-to", "Enter")
    page.wait_for_function("document.querySelector('#feed-rows .feed-row').dataset.seq === '1'")
    expect(page.locator(f"{ROWS}:first-child .feed-detail")).to_have_text("Session started.")
    now = window(page)
    for _ in range(8):  # and forward again from the top
        was = now
        now = scroll(page, False, now)
        assert now["last"] > was["last"] and now["rows"] <= MAX_ROWS and now["nodes"] <= MAX_NODES, now
    assert now["first"] > 1

    page.click("#feed-to-end")
    page.wait_for_function(f"document.querySelector('#feed-rows .feed-row:last-child').dataset.seq === '{n}'")
    now = window(page)
    assert now["rows"] <= MAX_ROWS and now["nodes"] <= MAX_NODES
    shot(page, "e2e-big-run")
    assert page.errors == []


def test_search_finds_a_record_by_a_payload_word_streams_matches_and_opens_it(page, console_server):
    name = f"e2e-search-{uuid.uuid4().hex[:8]}"
    pk = post(console_server, name, [log(f"line {i}") for i in range(40)] + [
        {"type": "tool_call", "name": "write_file", "args": {"path": "notes/xylophone.txt", "contents": "<b>x</b>"}},
        log("after it"),
    ])["run"]
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    wait_state(page, "live")
    page.fill("#feed-q", "xylophone")
    with page.expect_navigation():
        page.press("#feed-q", "Enter")
    assert "q=xylophone" in page.url
    wait_state(page, "live")
    page.wait_for_function("document.querySelectorAll('#feed-rows .feed-row').length === 1")
    assert page.get_attribute(ROWS, "data-seq") == "41"
    expect(page.locator(ROWS)).to_contain_text("write_file")

    # New records arrive: only those holding the word join the filtered view, live.
    post(console_server, pk, [log("no match here"), log("a xylophone again"), log("still nothing")])
    page.wait_for_function("document.querySelectorAll('#feed-rows .feed-row').length === 2")
    assert page.eval_on_selector_all(ROWS, "els => els.map(e => e.dataset.seq)") == ["41", "44"]

    # Open it: the record's own page.
    with page.expect_navigation():
        page.click(f"{ROWS}[data-seq='41'] .feed-open")
    assert page.url.endswith(f"/runs/{pk}/events/41/")
    assert "xylophone" in page.inner_text("main")

    # The whole feed opens at a record's seq too (an address to share).
    page.goto(f"{console_server.url}/runs/{pk}/feed/?seq=41")
    page.wait_for_selector(".feed-row.feed-target")
    assert page.get_attribute(".feed-target", "data-seq") == "41"
    assert page.locator(ROWS).count() > 1  # unfiltered: what came after it too
    assert page.errors == []


def launch(page, server, script, name):
    page.goto(f"{server.url}/runs/new/")
    page.fill("#f-name", name)
    page.fill("#f-task", "List the workspace.")
    page.check("input[name='provider.kind'][value='script']")
    page.fill("#f-provider-script", json.dumps(script))
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r"/runs/\d+/feed/$"))
    return int(re.search(r"/runs/(\d+)/feed/", page.url).group(1))


SLOW = {"root": [{"delayMs": 300, "toolCalls": [{"name": "list_dir", "args": {"path": "."}}]}] * 300}
SHORT = {"root": [{"delayMs": 1500, "toolCalls": [{"name": "list_dir", "args": {"path": "."}}]},
                  {"delayMs": 1500, "toolCalls": [{"name": "finish", "args": {"summary": "Listed it."}}]}]}

CANCEL = """
from runs.launch.services import run_cancel
from runs.models import Run
for pk in {pks}:
    run_cancel(Run.objects.get(pk=pk))
"""

WATCH_HEADER = """() => {
  window.__statuses = [];
  setInterval(() => {
    const s = document.getElementById('run-status').textContent.trim();
    if (window.__statuses[window.__statuses.length - 1] !== s) window.__statuses.push(s);
  }, 50);
}"""


def test_the_header_of_a_launched_run_goes_queued_running_completed_and_cancel_disappears(page, console_server):
    # Both engine threads busy with slow runs: the next launch waits, queued.
    busy = [launch(page, console_server, SLOW, f"e2e-busy-{i}-{uuid.uuid4().hex[:6]}") for i in range(2)]
    pk = launch(page, console_server, SHORT, f"e2e-header-{uuid.uuid4().hex[:6]}")
    assert page.inner_text("#run-status") == "queued"
    assert page.locator("#cancel-run").count() == 1
    page.evaluate(WATCH_HEADER)
    shot(page, "e2e-header-queued")
    console_server.manage("shell", "-c", CANCEL.format(pks=busy))  # frees the threads
    page.wait_for_function("document.getElementById('run-status').textContent.trim() === 'running'", timeout=30_000)
    shot(page, "e2e-header-running")
    assert page.locator("#cancel-run").count() == 1
    page.wait_for_function("window.__statuses[window.__statuses.length - 1] === 'completed'", timeout=60_000)
    page.wait_for_selector("#cancel-run", state="detached")
    assert page.evaluate("window.__statuses") == ["queued", "running", "completed"]
    figures = dict(zip(page.eval_on_selector_all("#run-header .figures span", "els => els.map(e => e.textContent)"),
                       page.eval_on_selector_all("#run-header .figures b", "els => els.map(e => e.textContent)")))
    last_seq = int(console_server.manage("shell", "-c", f"from runs.models import Run; print(Run.objects.get(pk={pk}).last_seq)").stdout.split()[-1])
    assert figures["records"] == str(last_seq) and figures["turns"] == "2" and figures["agents"] == "1"
    assert figures["calls"] == "2"
    wait_state(page, "ended")
    assert page.inner_text("#feed-state") == "ended (completed)"
    shot(page, "e2e-header-completed")
    assert page.errors == []


def test_a_run_cut_off_by_a_killed_server_reads_interrupted_after_restart(page, console_server):
    pk = launch(page, console_server, SLOW, f"e2e-killed-{uuid.uuid4().hex[:6]}")
    page.wait_for_function("document.querySelectorAll('#feed-rows .feed-row').length > 5", timeout=30_000)
    wait_state(page, "live")
    console_server.process.kill()  # no clean shutdown: the run is left "running" in the database
    console_server.process.wait()
    wait_state(page, "reconnecting")
    console_server.start()
    wait_state(page, "interrupted", timeout=60_000)  # the same page, reconnected: no reload
    reason = "the server or worker running it stopped before it ended"
    assert page.inner_text("#feed-state") == f"interrupted — {reason}"
    assert reason in page.inner_text("#feed-end")
    page.wait_for_function("document.getElementById('run-status').textContent.trim() === 'interrupted'")
    assert page.inner_text("#run-why") == f"— {reason}"
    assert page.locator("#cancel-run").count() == 0 and page.locator("#mark-ended").count() == 0
    shot(page, "e2e-interrupted")
    page.reload()
    wait_state(page, "interrupted")
    assert page.inner_text("#run-status") == "interrupted"
    assert page.errors == []
