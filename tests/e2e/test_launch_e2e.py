"""Launching from the browser: fill the form (inline validation as you edit), launch a shipped demo,
watch the live feed until the run ends, read the counts on the agent page. A viewer is refused,
and a run cut off by a server restart comes back `interrupted` with its events."""

import json
import re
import uuid

import pytest
from playwright.sync_api import expect

from tests.console_server import login

pytestmark = pytest.mark.e2e

ROWS = "#feed-rows .feed-row"


def wait_state(page, state, timeout=60_000):
    page.wait_for_function("s => document.getElementById('feed-state').dataset.state === s", arg=state,
                           timeout=timeout)


def test_launch_a_demo_watch_it_end_and_read_the_agent_counts(page, console_server):
    page.goto(f"{console_server.url}/")
    page.click("nav >> text=New run")
    page.click(".launch-intro >> text=review")  # the shipped demo's ready spec
    assert page.input_value("#f-agents-1-slug") == "reviewer"
    assert page.is_checked("input[name='provider.kind'][value='demo']")

    # Inline validation as the operator edits: a bad slug is named beside its input, then cleared.
    page.fill("#f-agents-1-slug", "author")
    page.locator("#f-agents-1-slug").blur()
    page.wait_for_selector("#err-f-agents-1-slug li")
    assert "duplicate slug 'author'" in page.inner_text("#err-f-agents-1-slug")
    # Renaming the reviewer also orphans the author's roster entry: both named at once.
    assert "2 problems" in page.inner_text("#launch-errors")
    assert "no profile's slug" in page.inner_text("#err-f-agents-0-subagents-0-agent")
    page.fill("#f-agents-1-slug", "reviewer")
    page.locator("#f-agents-1-slug").blur()
    page.wait_for_selector("#launch-errors .launch-ok")
    assert page.inner_text("#err-f-agents-1-slug") == ""

    name = f"e2e-launch-{uuid.uuid4().hex[:8]}"
    page.fill("#f-name", name)
    page.fill("#f-task", "Write greeting.txt saying hello, and get it reviewed.")
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r"/runs/\d+/feed/$"))
    pk = re.search(r"/runs/(\d+)/feed/", page.url).group(1)
    assert page.inner_text("h1") == name

    wait_state(page, "ended")
    expect(page.locator(f"{ROWS}:last-child .feed-detail")).to_have_text("Session ended: completed.")
    page.reload()
    assert page.inner_text("#run-status") == "completed"
    assert page.locator("#cancel-run").count() == 0  # ended: nothing to cancel

    page.goto(f"{console_server.url}/runs/{pk}/agents/root/")
    counts = {row.get_attribute("data-tool"): row.locator(".count").inner_text()
              for row in page.locator("#tool-surface tr[data-tool]").all()}
    assert counts["spawn_subagent"] == "2×" and counts["wait_for_subagents"] == "2×"
    assert counts["write_file"] == "1×" and counts["edit_file"] == "1×" and counts["read_file"] == "0×"
    assert page.errors == []


def test_a_viewer_cannot_launch(browser, console_server):
    context = browser.new_context()
    viewer = context.new_page()
    login(viewer, console_server, "viewer")
    assert viewer.locator("nav >> text=New run").count() == 0
    response = viewer.goto(f"{console_server.url}/runs/new/")
    assert response.status == 403
    assert "runs.add_run" in viewer.inner_text("main")
    context.close()


SLOW = {"root": [{"delayMs": 300, "toolCalls": [{"name": "list_dir", "args": {"path": "."}}]}] * 300}


def test_a_run_cut_off_by_a_restart_is_interrupted_with_its_events(page, console_server):
    page.goto(f"{console_server.url}/runs/new/")
    page.fill("#f-task", "List the workspace, slowly, for a long time.")
    page.check("input[name='provider.kind'][value='script']")
    page.fill("#f-provider-script", json.dumps(SLOW))
    page.click("button[value=launch]")
    page.wait_for_url(re.compile(r"/runs/\d+/feed/$"))
    page.wait_for_function("document.querySelectorAll('#feed-rows .feed-row').length > 10", timeout=30_000)
    assert page.locator("#cancel-run").count() == 1

    console_server.restart()
    page.reload()
    assert page.inner_text("#run-status") == "interrupted"
    page.wait_for_function("document.querySelectorAll('#feed-rows .feed-row').length > 10", timeout=30_000)
    assert page.locator("#cancel-run").count() == 0
