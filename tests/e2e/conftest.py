"""End-to-end fixtures: a real Daphne serving the console (`tests.console_server`), and Debian's
Chromium driven by Playwright, with a page logged in as `operator`.
"""

import os
from pathlib import Path

import pytest

from tests.console_server import ConsoleServer, login

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def console_server(tmp_path_factory):
    server = ConsoleServer(tmp_path_factory.mktemp("console-var"))
    server.setup()
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: scripts/test installs Debian's chromium")
        pytest.skip(f"{CHROMIUM} is missing (scripts/test installs it as root)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def page(browser, console_server):
    """A fresh browser context logged in as `operator`; console errors are collected on `page.errors`."""
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.errors = []
    page.on("pageerror", lambda exc: page.errors.append(str(exc)))
    login(page, console_server)
    yield page
    context.close()
