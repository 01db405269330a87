"""First use in Chromium, against Daphne serving with DEBUG off as scripts/serve does: a wrong URL
shows the console's own page, the keyboard shortcuts work on the selectors they rely on."""

import pytest
from playwright.sync_api import expect

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


def test_a_newcomer_launches_from_the_untouched_form_and_watches_it_complete(page, console_server):
    page.goto(f"{console_server.url}/")
    page.click("nav >> text=New run")
    page.fill("#f-task", "Say hello to the console.")
    page.click("button[value=launch]")
    page.wait_for_url(lambda url: "/feed/" in url, timeout=30_000)
    page.wait_for_function("document.getElementById('feed-state').dataset.state === 'ended'", timeout=60_000)
    expect(page.locator("#feed-rows .feed-row:last-child .feed-detail")).to_have_text("Session ended: completed.")
    page.reload()
    assert page.inner_text("#run-status") == "completed"
    assert page.errors == []


def test_switching_a_profile_to_code_rewrites_its_allowlist_in_place(page, console_server):
    page.goto(f"{console_server.url}/runs/new/")
    page.select_option("#f-agents-0-executionMode", "responses_as_code")
    page.wait_for_selector(".launch-note")
    assert "rewritten as operation ids" in page.inner_text(".launch-note")
    assert page.inner_text("label[for='f-agents-0-allowlist']") == "Operations"
    assert "files.read_file" in page.input_value("#f-agents-0-allowlist")
    page.fill("#f-task", "Say hello.")
    page.locator("#f-task").blur()
    page.wait_for_selector("#launch-errors .launch-ok")
    assert page.errors == []
