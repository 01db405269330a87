"""First use in Chromium, against Daphne serving with DEBUG off as scripts/serve does: a wrong URL
shows the console's own page, the keyboard shortcuts work on the selectors they rely on."""

import pytest

pytestmark = pytest.mark.e2e


def test_a_404_shows_the_consoles_own_page(page, console_server):
    response = page.goto(f"{console_server.url}/runs/987654/agents/nobody/")
    assert response.status == 404
    assert page.inner_text("h1") == "Nothing here"
    assert "URLconf" not in page.content()
    page.click(".notice-page >> text=All runs")
    page.wait_for_url(f"{console_server.url}/")


def test_keyboard_shortcuts_follow_the_pages_controls(page, console_server):
    session_key, pk = console_server.operator_session_and_run("e2e-shortcuts")
    lines = "\n".join(f'{{"type":"turn_started","agentId":"root","turn":{n}}}' for n in range(1, 6))
    console_server.manage("ingest", "-", "--run", "e2e-shortcuts", input=lines + "\n")
    page.goto(f"{console_server.url}/runs/{pk}/feed/")
    page.wait_for_selector("#feed-rows .feed-row")
    assert page.locator("#feed-pause").count() == 1  # the control Esc clicks

    page.keyboard.press("j")
    page.keyboard.press("j")
    assert page.locator(".feed-row.kbd-current").get_attribute("data-seq") == "2"
    page.keyboard.press("k")
    assert page.locator(".feed-row.kbd-current").get_attribute("data-seq") == "1"

    page.keyboard.press("Escape")
    assert page.get_attribute("#feed-pause", "aria-pressed") == "true"

    page.keyboard.press("?")
    assert page.locator("#shortcuts").is_visible()
    assert "Refusals" in page.inner_text("#shortcut-links")
    page.keyboard.press("Escape")  # the dialog's own close
    assert not page.locator("#shortcuts").is_visible()

    page.keyboard.press("g")
    page.keyboard.press("s")
    page.wait_for_url(f"{console_server.url}/runs/{pk}/stores/")

    page.goto(f"{console_server.url}/glossary/")
    page.keyboard.press("/")
    assert page.evaluate("document.activeElement.id") == "glossary-search"
    page.keyboard.type("succession")
    assert page.locator(".glossary-entry:not([hidden])").count() >= 1
    assert page.locator("#succession").is_visible() and not page.locator("#arm").is_visible()
    assert page.errors == []
