"""Inspecting a step in Debian's Chromium: a feed row opens its record (click and Enter), the record
links to its other half and the browser comes back; a refusal opens its turn; the board demo's
timeline draws one lane per agent whose blocks open turns. Screenshots under var/screenshots/."""

import json

import pytest

from runs.demo import DEMO_DIR
from tests.paths import REPO
from tests.inspect_stream import inspect_stream
from tests.streams import REAL_MOCK

pytestmark = pytest.mark.e2e

SHOTS = REPO / "var" / "screenshots"


def run_pk(server, name):
    out = server.manage("shell", "-c", f"from runs.models import Run; print(Run.objects.get(name={name!r}).pk)")
    return int(out.stdout.strip().splitlines()[-1])


def shoot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"inspect-{name}.png"), full_page=False)


@pytest.fixture(scope="module")
def runs(console_server, tmp_path_factory):
    authored = tmp_path_factory.mktemp("inspect") / "inspect.ndjson"
    authored.write_text("".join(json.dumps(r) + "\n" for r in inspect_stream()))
    console_server.manage("ingest", REAL_MOCK, "--run", "inspect-mock")
    console_server.manage("ingest", authored, "--run", "inspect-authored")
    console_server.manage("launch", DEMO_DIR / "board.spec.json", "--name", "inspect-board", "--wait")
    return {name: run_pk(console_server, f"inspect-{name}") for name in ("mock", "authored", "board")}


def test_a_feed_row_opens_its_record_which_opens_its_other_half_and_back(page, console_server, runs):
    base = f"{console_server.url}/runs/{runs['mock']}"
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{base}/feed/")
    row = page.locator("#feed-rows .feed-row[data-kind=tool]").first
    row.wait_for()
    seq = int(row.get_attribute("data-seq"))
    shoot(page, "feed")
    row.click()  # anywhere on the row: its link is stretched over it
    page.wait_for_url(f"{base}/events/{seq}/")
    assert page.locator("h2.event-title code").inner_text() == "tool_call"
    shoot(page, "event-call")
    page.click("#other-half")
    page.wait_for_url(f"{base}/events/{seq + 1}/")
    assert "ms between the halves" in page.locator("#event-facts").inner_text()
    assert page.locator("#other-half").get_attribute("href") == f"/runs/{runs['mock']}/events/{seq}/"
    page.go_back()
    page.wait_for_url(f"{base}/events/{seq}/")
    page.go_back()
    page.wait_for_url(f"{base}/feed/")
    # The keyboard: focus the row's link and press Enter.
    link = page.locator(f"#feed-rows .feed-row[data-seq='{seq}'] a.feed-open")
    link.wait_for()
    link.focus()
    page.keyboard.press("Enter")
    page.wait_for_url(f"{base}/events/{seq}/")
    assert page.errors == [], page.errors


def test_a_failed_program_row_opens_the_program_with_its_failing_line(page, console_server, runs):
    base = f"{console_server.url}/runs/{runs['authored']}"
    page.set_viewport_size({"width": 1400, "height": 1000})
    from playwright.sync_api import expect

    page.goto(f"{base}/feed/?kind=program")
    row = page.locator("#feed-rows .feed-row.tone-fail").first
    # Its text, once drawn: a CI run read it empty while the ended run's rows were being drawn.
    expect(row).to_contain_text("KeyError: 'b'")
    expect(row).to_contain_text("turn 3")
    row.click()
    page.wait_for_url(f"{base}/events/*/")
    failing = page.locator("ol.source li.failing")
    assert failing.count() == 1 and failing.get_attribute("data-line") == "3"
    shoot(page, "event-program")


def test_a_refusal_opens_its_turn(page, console_server, runs):
    base = f"{console_server.url}/runs/{runs['authored']}"
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{base}/refusals/")
    page.locator(".refusal-group > summary").first.click()
    page.locator("a.refusal-turn").first.click()
    page.wait_for_url(f"{base}/agents/root/turns/3/")
    assert page.locator("#turn-refusals").is_visible() and page.locator("#turn-programs ol.source li.failing").count() == 1
    shoot(page, "turn")
    page.goto(f"{base}/agents/root/conversation/")
    assert page.locator("section.conversation-turn").count() == 4
    shoot(page, "conversation")
    page.goto(f"{base}/agents/root/")
    page.locator("#time").scroll_into_view_if_needed()
    assert page.locator("#latency tbody tr").count() >= 3
    shoot(page, "agent-time")
    assert page.errors == [], page.errors


def test_the_board_timeline_has_one_lane_per_agent_and_its_blocks_open_turns(page, console_server, runs):
    base = f"{console_server.url}/runs/{runs['board']}"
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{base}/agents/")
    agents = page.locator("#agent-roster tbody tr").count()
    page.goto(f"{base}/timeline/")
    lanes = page.locator("#timeline g.lane")
    assert agents > 1 and lanes.count() == agents
    shoot(page, "timeline-board")
    block = page.locator("#timeline a.turn-block").first
    href = block.get_attribute("href")
    assert "/turns/" in href
    block.click()
    page.wait_for_url(f"{console_server.url}{href}")
    assert page.locator("h2.turn-title").is_visible()
    page.go_back()
    page.click("#zoom-in")
    page.wait_for_url(f"{base}/timeline/?start=*")
    assert page.locator("#timeline g.lane").count() == agents and page.locator("#zoom-out").is_visible()
    assert page.errors == [], page.errors


AFTER_A_REFRESH = """() => new Promise(done => document.addEventListener('htmx:afterSettle', () => done(true), {once: true}))"""


def test_a_live_pages_refresh_keeps_the_groups_the_operator_opened_and_closed(page, console_server, tmp_path):
    stream = tmp_path / "live.ndjson"  # the authored run, still live: no session_ended yet
    stream.write_text("".join(json.dumps(r) + "\n" for r in inspect_stream() if r.get("type") != "session_ended"))
    console_server.manage("ingest", stream, "--run", "inspect-live")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{console_server.url}/runs/{run_pk(console_server, 'inspect-live')}/refusals/")
    assert page.locator("#run-page[hx-trigger]").count() == 1  # live: the page re-reads itself every 3 s
    agent, group = page.locator("details.refusal-agent").first, page.locator("details.refusal-group").first
    assert agent.get_attribute("open") is not None and group.get_attribute("open") is None
    group.locator(":scope > summary").click()
    page.evaluate(AFTER_A_REFRESH)
    assert page.locator("details.refusal-group").first.get_attribute("open") is not None  # still open
    page.locator("details.refusal-agent").first.locator(":scope > summary").click()  # open by default: closed
    page.evaluate(AFTER_A_REFRESH)
    assert page.locator("details.refusal-agent").first.get_attribute("open") is None
    assert page.locator("details.refusal-group").first.get_attribute("open") is not None
    assert page.errors == [], page.errors


def test_a_live_pages_refresh_keeps_the_rows_show_more_loaded_and_pages_on_past_new_ones(page, console_server, tmp_path):
    from playwright.sync_api import expect

    from tests.pages_helpers import refusal_roster

    def write(turns):  # no session_ended: the run stays live
        stream = tmp_path / f"roster-{turns}.ndjson"
        stream.write_text("".join(json.dumps(r) + "\n" for r in refusal_roster(turns, 10)))
        return stream

    console_server.manage("ingest", write(7), "--run", "inspect-paged")  # 70 shell refusals
    page.goto(f"{console_server.url}/runs/{run_pk(console_server, 'inspect-paged')}/refusals/")
    group = page.locator("details.refusal-group[data-operation='shell.shell']")
    shown = group.locator("tbody tr[data-turn]")
    group.locator(":scope > summary").click()
    expect(shown).to_have_count(5)
    group.get_by_role("button", name="Show more").click()
    expect(shown).to_have_count(25)
    page.evaluate(AFTER_A_REFRESH)
    expect(shown).to_have_count(25)  # not back to the first five
    assert group.get_attribute("open") is not None
    while group.get_by_role("button", name="Show more").count():
        before = shown.count()
        group.get_by_role("button", name="Show more").click()
        expect(shown).not_to_have_count(before)
    expect(shown).to_have_count(70)

    # Re-importing the 8-turn stream stores only turn 8 (its 10 further shell refusals).
    console_server.manage("ingest", write(8), "--run", "inspect-paged")
    page.evaluate(AFTER_A_REFRESH)
    expect(group.locator(":scope > summary .count")).to_have_text("80×")
    expect(shown).to_have_count(70)
    expect(group.locator("tr.more")).to_contain_text("… and 10 more of this call")
    group.get_by_role("button", name="Show more").click()
    expect(shown).to_have_count(80)
    assert [int(t) for t in shown.evaluate_all("rows => rows.map(r => r.dataset.turn)")] == sorted(
        t for t in range(1, 9) for _ in range(10))
    shoot(page, "refusals-paged-live")
    assert page.errors == [], page.errors


def test_the_refusals_search_narrows_the_whole_run_as_you_type_and_survives_a_refresh(page, console_server, tmp_path):
    from playwright.sync_api import expect

    from tests.pages_helpers import refusing_agents

    stream = tmp_path / "refusing.ndjson"  # 150 agents refusing, no session_ended: the run stays live
    stream.write_text("".join(json.dumps(r) + "\n" for r in refusing_agents(150)))
    console_server.manage("ingest", stream, "--run", "inspect-refusing")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{console_server.url}/runs/{run_pk(console_server, 'inspect-refusing')}/refusals/")
    agents, box = page.locator("details.refusal-agent"), page.locator("#refusal-search")
    expect(agents).to_have_count(100)
    expect(page.locator("#refusal-pages")).to_contain_text("Agents 1–100 of 150")
    box.fill("worker-149")  # on the second page: found across the run
    expect(agents).to_have_count(1)
    expect(agents.first).to_have_attribute("data-agent", "worker-149")
    assert "q=worker-149" in page.url
    box.fill("board")
    expect(agents).to_have_count(22)  # every seventh
    expect(page.locator("#refusal-count")).to_have_text("22 agents with refusals matching it, across the run")
    page.evaluate(AFTER_A_REFRESH)  # the live page's poll keeps what was typed, and what it found
    expect(box).to_have_value("board")
    expect(agents).to_have_count(22)
    shoot(page, "refusals-search")
    box.fill("")
    expect(agents).to_have_count(100)
    assert page.errors == [], page.errors
