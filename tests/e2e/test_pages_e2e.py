"""The run pages in Debian's Chromium: a screenshot of each page of the demo run (under
var/screenshots/), what each shows, and a live run's page following appended events by itself."""

import pytest

from tests.paths import REPO, STREAMS

pytestmark = pytest.mark.e2e

SHOTS = REPO / "var" / "screenshots"


def run_pk(server, name):
    out = server.manage("shell", "-c", f"from runs.models import Run; print(Run.objects.get(name={name!r}).pk)")
    return int(out.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def demo(console_server):
    console_server.manage("ingest", STREAMS / "multi_agent.ndjson", "--run", "demo")
    console_server.manage("ingest", STREAMS / "pages_run.ndjson", "--run", "pages-demo")
    return {"demo": run_pk(console_server, "demo"), "pages": run_pk(console_server, "pages-demo")}


def shoot(page, url, name):
    page.goto(url)
    page.wait_for_load_state("networkidle")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"pages-{name}.png"), full_page=True)
    assert page.errors == [], page.errors


PAGES = [
    ("overview", "", "#capability-set"),
    ("agents", "agents/", "#agent-roster"),
    ("agent-root", "agents/root/", "#surface .module-card"),
    ("agent-reviewer", "agents/agent-5/", "#tool-surface"),
    ("stores", "stores/", "article.store"),
    ("divergences", "divergences/", "#divergence-list"),
    ("refusals", "refusals/", ".refusal-agent"),
    ("arms", "arms/", "#arms"),
]


@pytest.mark.parametrize("name,path,selector", PAGES, ids=[p[0] for p in PAGES])
def test_each_page_of_the_demo_run(page, console_server, demo, name, path, selector):
    shoot(page, f"{console_server.url}/runs/{demo['demo']}/{path}", f"demo-{name}")
    assert page.locator(selector).first.is_visible()
    assert page.locator("nav.tabs a[aria-current=page]").count() == 1
    assert page.locator("#divergence-badge").inner_text() == "1"  # agent-0's inheritance fell back
    # the page fits the window: nothing scrolls sideways (docViewTypes wrap at their "+")
    assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"]


def test_the_rich_fixture_pages_read_as_measured(page, console_server, demo):
    base = f"{console_server.url}/runs/{demo['pages']}"
    shoot(page, f"{base}/agents/root/", "pages-agent-root")
    row = page.locator('#surface tr[data-operation="files.write_file"]')
    assert row.inner_text().split() == ["0×", "gg.files.write_file", "files.write_file"]
    assert page.locator('#surface tr[data-operation="memories.read_memory"] td.count').all_inner_texts() == ["1×", "1×"]
    assert page.locator("#context svg g.bar").count() == 2
    shoot(page, f"{base}/stores/", "pages-stores")
    assert page.locator("article.store").count() == 14
    shoot(page, f"{base}/divergences/", "pages-divergences")
    assert page.locator("#divergence-list tr[data-divergence]").count() == 4
    shoot(page, f"{base}/refusals/", "pages-refusals")
    assert page.locator("#refused-total").inner_text() == "3"
    shoot(page, f"{base}/arms/", "pages-arms")
    shoot(page, f"{base}/agents/", "pages-agents")


def test_the_runs_list_and_the_import_form(page, console_server, demo):
    shoot(page, f"{console_server.url}/", "runs-list")
    row = page.locator("table.runs tbody tr", has=page.locator('a:text-is("demo")'))
    cells = row.locator("td").all_inner_texts()
    # a selection box first, then name, status, source, received, started, agents, turns, calls, error turns, …
    assert cells[2:10] == ["completed", "Import", cells[4], cells[5], "7", "11", "42", "4"] and cells[10] == "2 · 8"
    page.goto(f"{console_server.url}/runs/import/")
    page.set_input_files("input[type=file]", str(STREAMS / "malformed_tail.ndjson"))
    page.fill("input[name=name]", "uploaded-tail")
    page.click("form.panel button[type=submit]")  # not the top bar's "Log out"
    page.wait_for_selector("#import-result")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / "pages-import-result.png"), full_page=True)
    assert page.locator("#result-stored").inner_text() == "stored 6"
    assert page.locator("#result-rejected").inner_text() == "rejected 5"
    assert page.locator("#rejections tbody tr").count() == 5
    page.click("#import-result h2 a")  # on to the run it made
    assert page.locator("#clock-runtime").is_visible() and page.locator("#rejected-lines").is_visible()


def test_the_import_form_says_it_is_working_once_sent(page, console_server):
    page.goto(f"{console_server.url}/runs/import/")
    assert page.locator("#import-busy").is_hidden()
    # Held on the page (a listener after the form's own), as a big upload holds it for minutes.
    page.evaluate("document.addEventListener('submit', e => e.preventDefault())")
    page.set_input_files("input[type=file]", str(STREAMS / "malformed_tail.ndjson"))
    page.click("form.panel button[type=submit]")
    button = page.locator("form.panel button[type=submit]")
    assert button.is_disabled() and button.inner_text() == "Importing…"
    assert page.locator("#import-busy").is_visible() and page.errors == []


# What the page shows once the whole run has arrived: every agent, the ended status, and no trigger
# left to poll with. Read in one evaluation, so no assertion can land between two polls' swaps, and
# null-safe, so a check made while an element is not there yet reads "not yet" rather than throwing.
RUN_ENDED_ON_PAGE = """() => {
  const status = document.querySelector('#run-status');
  const page = document.querySelector('#run-page');
  return document.querySelectorAll('#agent-roster tr[data-agent]').length === 7
    && status !== null && status.textContent.trim() === 'completed'
    && page !== null && !page.hasAttribute('hx-trigger');
}"""


def test_a_live_run_page_follows_new_events(page, console_server, tmp_path):
    lines = (STREAMS / "pages_run.ndjson").read_bytes().splitlines(keepends=True)
    head = tmp_path / "head.ndjson"
    head.write_bytes(b"".join(lines[:50]))  # root and helper-1 so far; no session_ended
    console_server.manage("ingest", head, "--run", "live-pages")
    pk = run_pk(console_server, "live-pages")
    page.goto(f"{console_server.url}/runs/{pk}/agents/")
    assert page.locator("#agent-roster tr[data-agent]").count() == 2
    assert page.locator("#run-status").inner_text() == "running"
    assert page.locator("#run-page[hx-trigger]").count() == 1  # live: the page polls
    console_server.manage("ingest", STREAMS / "pages_run.ndjson", "--run", "live-pages")  # the rest arrives
    # The page follows on its own: a poll every 3 s; the deadline only bounds a failure (a loaded
    # machine can be slow to serve a poll), it is never slept through.
    page.wait_for_function(RUN_ENDED_ON_PAGE, timeout=60_000)
    assert page.errors == []


def test_an_agent_id_of_200_characters_wraps_on_the_roster_and_fits_the_feeds_controls(page, console_server,
                                                                                     tmp_path):
    # agent-1 renamed: an id of 200 characters and no separator (the roster was 2,593 px wide, the feed's
    # controls 1,755 px: a select is as wide as its longest option)
    long_id = "x" * 200
    stream = tmp_path / "long-id.ndjson"
    stream.write_text((STREAMS / "multi_agent.ndjson").read_text().replace('"agent-1"', f'"{long_id}"'))
    console_server.manage("ingest", stream, "--run", "long-id")
    base = f"{console_server.url}/runs/{run_pk(console_server, 'long-id')}"
    for path, selector in (("agents/", f'#agent-roster tr[data-agent="{long_id}"]'), ("feed/", "#feed-agent")):
        shoot(page, f"{base}/{path}", f"long-id-{path.strip('/')}")
        assert page.locator(selector).first.is_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= page.viewport_size["width"], path
    assert page.locator("#feed-agent option").all_inner_texts().count(long_id) == 1  # listed whole, shown clipped
