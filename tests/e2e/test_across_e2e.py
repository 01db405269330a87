"""Across runs in Debian's Chromium: filter the runs list, select two, compare them, follow a link
to one side's agent; the analysis page with its charts. Screenshots under var/screenshots/."""

import pytest

from tests.paths import GG_FIXTURES, REPO, STREAMS

pytestmark = pytest.mark.e2e

SHOTS = REPO / "var" / "screenshots"


@pytest.fixture(scope="module")
def corpus(console_server):
    console_server.manage("ingest", STREAMS / "multi_agent.ndjson", "--run", "across-multi")
    console_server.manage("ingest", STREAMS / "pages_run.ndjson", "--run", "across-pages")
    console_server.manage("ingest", GG_FIXTURES / "real-mock-session.ndjson", "--run", "across-mock")


def shot(page, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"across-{name}.png"), full_page=True)
    page.screenshot(path=str(SHOTS / f"across-{name}-top.png"))  # the first 1400×1000, as a reader lands


def test_filter_select_two_compare_and_follow_an_agent(page, console_server, corpus):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{console_server.url}/")
    page.select_option("select[name=language]", "python")
    page.click("#run-filter button[type=submit]")
    page.wait_for_url(lambda url: "language=python" in url)
    names = page.locator("#run-table tbody tr[data-run]")
    assert sorted(names.evaluate_all("rows => rows.map(r => r.dataset.run)")) == ["across-multi", "across-pages"]
    shot(page, "list-filtered")
    for checkbox in page.locator("#run-table tbody input[type=checkbox]").all():
        checkbox.check()
    page.click("button[value=compare]")
    page.wait_for_url(lambda url: "/runs/compare/" in url)
    assert page.locator("#side-a").inner_text() == "across-multi"  # the older run is a
    assert page.locator("section.figures-pair").count() >= 2
    shot(page, "compare")
    link = page.locator("section.figures-pair .pair-sides a[href*='/agents/']").first
    target = link.get_attribute("href")
    link.click()
    page.wait_for_url(lambda url: url.endswith(target))
    assert page.locator("#agent-facts").is_visible()
    assert page.errors == [], page.errors


def test_the_analysis_page_draws_its_charts(page, console_server, corpus):
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{console_server.url}/analysis/?group=arm")
    assert page.locator("#analysis-table tbody tr[data-group]").count() >= 5
    assert page.locator("figure.chart svg rect.bar").count() > 0
    shot(page, "analysis")
    assert page.errors == [], page.errors


def test_delete_asks_first_and_keeping_deletes_nothing(page, console_server, corpus):
    console_server.manage("shell", "-c", "from django.contrib.auth.models import Permission, User; "
                          "User.objects.get(username='operator').user_permissions.add("
                          "Permission.objects.get(codename='delete_run', content_type__app_label='runs'))")
    page.set_viewport_size({"width": 1400, "height": 1000})
    page.goto(f"{console_server.url}/?q=across-mock")
    page.locator("#run-table tbody input[type=checkbox]").first.check()
    page.click("button[value=delete]")
    assert page.locator("#runs-to-delete li").all_inner_texts()[0].startswith("across-mock")
    shot(page, "delete-confirm")
    page.click("text=Keep them")
    page.wait_for_url(lambda url: "q=across-mock" in url)
    assert page.locator("#run-table tbody tr[data-run]").count() == 1
    assert page.errors == [], page.errors


def test_a_long_name_without_a_break_stays_within_the_screen(page, console_server, corpus):
    """A 200-character run name with no break in it made the runs list 3,045 px wide at 1,400."""
    name = "LongRunName" * 18 + "xx"
    console_server.manage("ingest", STREAMS / "multi_agent.ndjson", "--run", name)
    pk = console_server.manage("shell", "-c", f"from runs.models import Run; print(Run.objects.get(name={name!r}).pk)")
    pk = int(pk.stdout.strip().splitlines()[-1])
    for path in ("/", f"/runs/{pk}/", f"/runs/compare/?a={pk}&b={pk}", "/analysis/?group=prefix"):
        page.goto(console_server.url + path)
        wide = page.evaluate("""() => Array.from(document.querySelectorAll('body *'))
            .filter(e => e.getBoundingClientRect().right > 1400).map(e => e.tagName + ' ' + e.className)""")
        assert wide == [], path
