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


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    """A failed browser test reports what the server and the page were doing: the tail of Daphne's
    log, every run's status and last seq, and the feed's indicator and note (a flake on a loaded
    CI machine is then readable from its report alone)."""
    report = yield
    server = item.funcargs.get("console_server")
    if report.when != "call" or not report.failed or server is None:
        return report
    log = server.var_dir / "daphne.log"
    lines = [ln for ln in log.read_text(errors="replace").splitlines() if "/static/" not in ln] if log.exists() else []
    report.sections.append(("daphne.log (last 80 lines)", "\n".join(lines[-80:])))
    runs = server.manage("shell", "-c", RUNS_NOW, check=False)
    report.sections.append(("runs", runs.stdout + runs.stderr))
    page = item.funcargs.get("page")
    if page is not None:
        try:
            report.sections.append(("page", page.evaluate(PAGE_NOW)))
        except Exception as exc:  # noqa: BLE001 - the page may be gone; the report still goes out
            report.sections.append(("page", f"could not be read: {exc}"))
    return report


RUNS_NOW = """
from runs.models import Run
for r in Run.objects.order_by("pk"):
    print(r.pk, r.source, r.status, r.last_seq, repr(r.name))
"""

PAGE_NOW = """() => {
  const s = document.getElementById('feed-state'), n = document.getElementById('feed-note');
  return JSON.stringify({url: location.href, state: s && s.dataset.state, drops: s && s.dataset.drops,
    text: s && s.textContent, note: n && n.textContent,
    rows: document.querySelectorAll('#feed-rows .feed-row').length});
}"""
