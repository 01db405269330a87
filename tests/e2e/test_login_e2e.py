import pytest

pytestmark = pytest.mark.e2e


def test_operator_logs_in_and_sees_runs(page, console_server):
    page.goto(f"{console_server.url}/")
    assert page.locator("h1").first.inner_text() == "Runs"
    assert page.errors == []


def test_anonymous_browser_is_sent_to_login(browser, console_server):
    context = browser.new_context()
    anon = context.new_page()
    anon.goto(f"{console_server.url}/")
    assert "/login/" in anon.url
    context.close()
