"""An XSS corpus in every rendered field of a run's events, loaded in Chromium on every page of the
run: no dialog fires, no injected global is set, no injected handler, script or javascript: URL
reaches the DOM, and the payloads read as text.

The payloads cover script tags, event handlers, javascript: URLs, SVG, attribute break-outs and
htmx attributes (the pages run htmx, which would act on an injected hx-* attribute)."""

import itertools
import json
import re
from urllib.parse import quote

import pytest

pytestmark = pytest.mark.e2e

_n = itertools.count(1)


def payloads():
    """An endless supply of distinct payloads; each sets window.__xss<n> (and most alert) if run."""
    shapes = [
        '<script>window.__xss{n}=1;alert({n})</script>',
        '<img src=x onerror="window.__xss{n}=1;alert({n})">',
        '<svg onload="window.__xss{n}=1;alert({n})"></svg>',
        '<svg><script>window.__xss{n}=1</script></svg>',
        'javascript:window.__xss{n}=1;alert({n})',
        '<a href="javascript:window.__xss{n}=1">x{n}</a>',
        '"><script>window.__xss{n}=1</script>',
        "'><img src=x onerror=window.__xss{n}=1>",
        '<iframe src="javascript:window.__xss{n}=1"></iframe>',
        '<div hx-get="/logout/" hx-trigger="load" hx-on::after-request="window.__xss{n}=1">h{n}</div>',
        '</textarea></title></pre><script>window.__xss{n}=1</script>',
        '<details open ontoggle="window.__xss{n}=1">',
    ]
    for shape in itertools.cycle(shapes):
        yield shape.format(n=next(_n))


P = payloads()
# A run name holds no "/" (an address takes it as one part), as the first payload does: the name is an
# <img> one of its own, and that payload is skipped so every other value keeps its place.
next(P)
RUN_NAME = '<img src=x onerror="window.__xss0=1;alert(0)">'
ROOT_PROFILE, SUB_ID, SUB_PROFILE, TOOL_AGENT = next(P), next(P), next(P), next(P)
MEMORIES = f"memories-{next(P)}"
MEMORY_NAME, FILE_PATH, LOG_TEXT, ASSISTANT_TEXT = next(P), next(P), next(P), next(P)
OPERATION, PROGRAM_LOG, PROGRAM_ERROR, BRIEF, LANG = next(P), next(P), next(P), next(P), next(P)


def stream():
    stamp = (f"2026-08-03T00:00:{i // 1000:02d}.{i % 1000:03d}Z" for i in itertools.count())
    sub = {"agentId": SUB_ID, "parentAgentId": "root"}
    tool = {"agentId": TOOL_AGENT, "parentAgentId": "root"}
    records = [
        {"type": "session_started", "capabilitySet": {"agents": [
            {"name": next(P), "slug": ROOT_PROFILE, "modelId": next(P),
             "capabilities": [{"id": next(P), "enabled": True, "params": {"scope": next(P)}}]}],
            "limits": {"maxTurns": next(P)}}},
        {"agentId": "root", "type": "agent_spawned", "profileId": ROOT_PROFILE, "modelId": next(P), "depth": 0,
         "cwd": next(P)},
        {"agentId": "root", "type": "agent_modules", "modules": [
            {"kind": "memories", "moduleId": MEMORIES, "enabled": True, "origin": "created", "writable": True,
             "scope": "inherited"},
            {"kind": "tasks", "moduleId": f"tasks-{next(P)}", "enabled": True, "origin": "created", "writable": True}]},
        {"agentId": "root", "type": "agent_surface", "executionMode": "responses_as_code", "tools": [],
         "programLanguage": LANG, "docViewTypes": next(P),
         "apis": [{"module": next(P), "path": next(P), "description": next(P),
                   "functions": [{"name": next(P), "operation": OPERATION},
                                 {"name": next(P), "operation": "files.read_file"}]}]},
        {"agentId": "root", "type": "memory_state", "moduleId": MEMORIES, "strategy": next(P),
         "memories": [{"name": MEMORY_NAME, "description": next(P), "len": 10, "lines": 1}], "count": 1,
         "totalLen": 10, "totalLines": 1, "scope": next(P), "writable": True},
        {"agentId": "root", "type": "memory_revision", "name": MEMORY_NAME, "revision": 1, "change": "written",
         "description": next(P), "body": next(P), "len": 10, "lines": 1},
        {"agentId": "root", "type": "tasks_state", "moduleId": f"tasks-{next(P)}",
         "tasks": [{"id": next(P), "title": next(P), "description": next(P), "status": "pending", "blockedBy": []}]},
        {"agentId": "root", "type": "turn_started"},
        {"agentId": "root", "type": "assistant_message", "text": ASSISTANT_TEXT},
        {"agentId": "root", "type": "api_call", "operation": OPERATION},
        {"agentId": "root", "type": "api_result", "operation": OPERATION, "ok": False, "failure": "unavailable"},
        {"agentId": "root", "type": "log", "level": "warn",
         "message": f"the program's `{next(P)}` call was refused before it ran: {next(P)}"},
        {"agentId": "root", "type": "log", "level": "warn", "message": "2 further refused call(s) were not recorded"},
        {"agentId": "root", "type": "log", "level": "error", "message": LOG_TEXT},
        {"agentId": "root", "type": "code_execution", "ok": False, "toolCalls": 1, "apiCalls": 1,
         "logs": [PROGRAM_LOG, next(P)], "error": PROGRAM_ERROR, "finished": next(P)},
        {"agentId": "root", "type": "shell", "origin": "program", "command": next(P), "cwd": {"type": "relative",
         "path": next(P)}, "exitCode": 1, "stdout": next(P), "stderr": next(P)},
        {"agentId": "root", "type": "turn_outcome", "outcome": "error", "error": next(P), "errorType": next(P),
         "consecutiveErrors": 1, "turns": 1},
        {"agentId": "root", "type": "context_managed", "action": "close_docs_views", "reclaimedTokens": 10,
         "items": 1, "detail": next(P)},
        {"agentId": "root", "type": "compaction", "strategy": next(P), "summary": next(P), "beforeTokens": 10,
         "afterTokens": 5, "summaryTokens": 2, "retained": {"skills": 0, "tasks": 0, "memories": 0}},
        {**sub, "type": "agent_spawned", "profileId": SUB_PROFILE, "modelId": next(P), "depth": 1, "cwd": next(P),
         "brief": BRIEF, "worktree": next(P)},
        {**sub, "type": "agent_modules", "modules": [
            {"kind": "memories", "moduleId": MEMORIES, "enabled": True, "origin": "inherited", "writable": False,
             "scope": "read-only"}]},
        {**sub, "type": "agent_status", "status": "blocked", "waitingOn": next(P)},
        {**sub, "type": "agent_transition", "kind": "fsm", "toAgentId": next(P), "profileId": next(P),
         "state": next(P), "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": MEMORIES,
                                        "toModuleId": f"memories-{next(P)}"}]},
        {**sub, "type": "fsm_state", "fsmId": next(P), "state": next(P), "profileId": next(P), "from": next(P)},
        {**sub, "type": "agent_returned", "summary": next(P)},
        {**tool, "type": "agent_spawned", "profileId": next(P), "modelId": next(P), "depth": 1, "cwd": "/w"},
        {**tool, "type": "agent_surface", "executionMode": "tool_calling", "tools": [next(P), "read_file", "finish"]},
        {**tool, "type": "turn_started"},
        {**tool, "type": "tool_call", "name": "write_file", "args": {"path": FILE_PATH, "contents": next(P)}},
        {**tool, "type": "tool_result", "name": "write_file", "ok": False, "summary": next(P), "failure": "other"},
        {**tool, "type": "tool_call", "name": next(P), "args": {next(P): next(P)}},
        {**tool, "type": "usage", "profileId": next(P), "modelId": next(P),
         "tokens": {"uncachedInput": 1, "cachedInput": None, "output": 1, "reasoning": None}},
        {"type": next(P), "agentId": "root", "field": next(P)},  # an unknown type: shown raw
        {"type": "warning", "message": next(P)},  # a host row
    ]
    return "".join(json.dumps({"timestamp": next(stamp), "sessionId": "xss", **r}) + "\n" for r in records)


INJECTED = """() => {
  const found = [];
  for (const el of document.querySelectorAll('*')) {
    for (const a of el.attributes) {
      const name = a.name.toLowerCase(), value = a.value.trim().toLowerCase();
      // an injected handler (hx-get holding the page's own percent-encoded URL is not one)
      if ((name.startsWith('on') || name.startsWith('hx-on')) && a.value.includes('__xss')) found.push(el.outerHTML);
      if (['href', 'src', 'action', 'formaction', 'xlink:href', 'hx-get'].includes(name) && value.startsWith('javascript:'))
        found.push(el.outerHTML);
    }
    if (el.tagName === 'SCRIPT' && el.textContent.includes('__xss')) found.push(el.outerHTML);
  }
  return found;
}"""


@pytest.fixture(scope="module")
def xss_run(console_server, tmp_path_factory):
    path = tmp_path_factory.mktemp("xss") / "xss.ndjson"
    path.write_text(stream())
    done = console_server.manage("ingest", path, "--run", RUN_NAME)
    assert done.stdout.strip().endswith("rejected 0"), done.stdout + done.stderr
    return int(re.search(r"\(id (\d+)\)", done.stderr)[1])


def visit(page, url, dialogs, settle=None):
    page.goto(url)
    page.wait_for_load_state("networkidle")
    if settle:
        settle()
    page.wait_for_timeout(300)  # let htmx process what was swapped in (a hx-trigger="load" would fire)
    assert page.errors == [], (url, page.errors)
    assert dialogs == [], (url, dialogs)
    assert page.evaluate("Object.keys(window).filter(k => k.startsWith('__xss'))") == [], url
    assert page.evaluate(INJECTED) == [], url
    return page.inner_text("body")


def test_xss_corpus_is_text_on_every_page_of_the_run(page, console_server, xss_run):
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    base = f"{console_server.url}/runs/{xss_run}"

    assert RUN_NAME in visit(page, f"{console_server.url}/", dialogs)
    shown = {}
    for name in ("", "agents/", "stores/", "divergences/", "refusals/", "arms/"):
        shown[name] = visit(page, f"{base}/{name}", dialogs)
        assert RUN_NAME in shown[name], name
    assert SUB_ID in shown["agents/"] and TOOL_AGENT in shown["agents/"]
    assert MEMORY_NAME in shown["stores/"] or MEMORIES in shown["stores/"]
    assert MEMORIES in shown["divergences/"]

    # Every agent's page, reached the way an operator does: from the agents page's links.
    page.goto(f"{base}/agents/")
    links = sorted(set(page.eval_on_selector_all(
        f"a[href^='/runs/{xss_run}/agents/']", "els => els.map(e => e.getAttribute('href'))")))
    assert len(links) >= 3
    agent_pages = " ".join(visit(page, f"{console_server.url}{href}", dialogs) for href in links)
    for text in (BRIEF, SUB_PROFILE, ROOT_PROFILE):
        assert text in agent_pages, text

    feed = visit(page, f"{base}/feed/", dialogs, settle=lambda: page.wait_for_function(
        "document.querySelectorAll('#feed-rows .feed-row').length > 10"))
    for text in (ASSISTANT_TEXT, LOG_TEXT, FILE_PATH):
        assert text in feed, text
    assert PROGRAM_LOG in page.text_content("#feed-rows")  # inside the collapsed "output" row

    reference = visit(page, f"{console_server.url}/reference/?lang={quote(LANG)}", dialogs)
    assert LANG in reference
