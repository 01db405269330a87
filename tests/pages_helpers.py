"""Helpers for the run-page tests: load an authored stream (or the inspection one), fetch a page,
read a page's rows."""

import re
from html.parser import HTMLParser
from urllib.parse import parse_qsl

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest

from runs.models import Run
from tests.inspect_stream import inspect_stream
from tests.paths import STREAMS


def load(name: str, fixture: str = "pages_run.ndjson") -> Run:
    run = Run.objects.create(name=name)
    result = ingest.append_lines(run, (STREAMS / fixture).read_bytes().splitlines())
    assert result.rejected == 0 or fixture == "malformed_tail.ndjson"
    run.refresh_from_db()
    return run


class _Rows(HTMLParser):
    """Text of every element carrying `attr`, keyed by the attribute's value (in document order)."""

    def __init__(self, attr):
        super().__init__()
        self.attr, self.stack, self.rows = attr, [], []

    def handle_starttag(self, tag, attrs):
        if tag == "wbr":  # a place a line may break, not a space between words
            return
        attrs = dict(attrs)
        for _tag, i in self.stack:  # cells and items read as separate words
            if i is not None:
                self.rows[i][1] += " "
        if self.attr in attrs:
            self.rows.append([attrs[self.attr], ""])
            self.stack.append((tag, len(self.rows) - 1))
        elif self.stack and tag == self.stack[-1][0]:
            self.stack.append((tag, None))

    def handle_endtag(self, tag):
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_data(self, data):
        for _tag, i in self.stack:
            if i is not None:
                self.rows[i][1] += data


def get(client, name, *args, query: str = "") -> str:
    """The page ``runs:<name>`` for `args` (and a query string), as text, asserting it answered 200."""
    response = client.get(reverse(f"runs:{name}", args=args) + (f"?{query}" if query else ""))
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


def reads_of(client, name, run, unread="usage") -> tuple[str, int]:
    """The page ``runs:<name>`` of `run` and how many queries it made, asserting that none read the agent
    field `unread` (a page reading what it shows of each agent, not its whole row)."""
    with CaptureQueriesContext(connection) as read:
        html = get(client, name, run.pk)
    assert not [q for q in read.captured_queries if f'"runs_agent"."{unread}"' in q["sql"]]
    return html, len(read.captured_queries)


def authored(name="inspect") -> Run:
    """A run holding the inspection stream (tests/inspect_stream.py)."""
    run = Run.objects.create(name=name)
    assert ingest.append(run, inspect_stream()).stored == len(inspect_stream())
    run.refresh_from_db()
    return run


def rows(html: bytes | str, attr: str) -> list[tuple[str, str]]:
    """[(attribute value, whitespace-collapsed text)] for every element with `attr`."""
    parser = _Rows(attr)
    parser.feed(html.decode() if isinstance(html, bytes) else html)
    return [(key, re.sub(r"\s+", " ", text).strip()) for key, text in parser.rows]


def refusing_agents(n: int) -> list[dict]:
    """`n` tool agents, each refused one call (agent i: `shell.shell`, every seventh `board.create_issue`)."""
    out = [{"type": "session_started", "agentId": "root"}]
    for i in range(n):
        agent, op = f"worker-{i:03d}", "board.create_issue" if i % 7 == 0 else "shell.shell"
        out += [{"type": "agent_spawned", "agentId": agent, "profileId": "worker", "depth": 1},
                {"type": "turn_started", "agentId": agent},
                {"type": "api_result", "agentId": agent, "operation": op, "ok": False, "failure": "unavailable"}]
    return out


def synthetic_stream(n: int) -> list[dict]:
    """Exactly n records of one run: a Python code agent (surface, roster, memories) and a
    tool-calling subagent, then turns of calls, refusals, programs and context bands."""
    caps = {"agents": [{"name": "Root", "slug": "root", "capabilities": [
        {"id": "memories", "enabled": True, "params": {"scope": "isolated"}}]}, {"name": "Tool", "slug": "tool"}]}
    apis = [{"module": "files", "path": "gg.files", "description": "Files.",
             "functions": [{"name": "read_file", "operation": "files.read_file"},
                           {"name": "write_file", "operation": "files.write_file"}]}]
    modules = [{"kind": "history", "moduleId": "history-0", "enabled": True, "origin": "created", "writable": True},
               {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created", "writable": True,
                "scope": "isolated"}]
    out = [
        {"type": "session_started", "agentId": "root", "capabilitySet": caps},
        {"type": "agent_spawned", "agentId": "root", "profileId": "root", "modelId": "m", "depth": 0},
        {"type": "agent_modules", "agentId": "root", "modules": modules},
        {"type": "agent_surface", "agentId": "root", "executionMode": "responses_as_code", "tools": [], "apis": apis,
         "programLanguage": "python", "docViewTypes": "return"},
        {"type": "memory_state", "agentId": "root", "moduleId": "memories-0", "memories": [], "count": 0},
        {"type": "agent_spawned", "agentId": "t1", "parentAgentId": "root", "profileId": "tool", "modelId": "m", "depth": 1},
        {"type": "agent_modules", "agentId": "t1", "parentAgentId": "root", "modules": [
            {**modules[1], "origin": "forked"}]},
        {"type": "agent_surface", "agentId": "t1", "parentAgentId": "root", "executionMode": "tool_calling",
         "tools": ["read_file", "finish"]},
    ]
    turn = 0
    while len(out) < n:
        turn += 1
        out += [
            {"type": "turn_started", "agentId": "root"},
            {"type": "context_breakdown", "agentId": "root", "bySource": [
                {"source": "system", "tokens": 900}, {"source": "docs_view", "tokens": turn % 50}], "totalTokens": 950},
            {"type": "api_call", "agentId": "root", "operation": "files.read_file"},
            {"type": "api_result", "agentId": "root", "operation": "files.read_file", "ok": True},
            {"type": "api_call", "agentId": "root", "operation": "shell.shell"},
            {"type": "api_result", "agentId": "root", "operation": "shell.shell", "ok": False, "failure": "unavailable"},
            {"type": "log", "agentId": "root", "level": "warn",
             "message": "the program's `gg.shell.shell` call was refused before it ran: not available"},
            {"type": "code_execution", "agentId": "root", "ok": True, "logs": [f"turn {turn}"]},
            {"type": "turn_started", "agentId": "t1", "parentAgentId": "root"},
            {"type": "tool_call", "agentId": "t1", "parentAgentId": "root", "name": "read_file", "args": {}},
            {"type": "tool_result", "agentId": "t1", "parentAgentId": "root", "name": "read_file", "ok": True},
        ]
    return out[:n]


def refusal_roster(turns: int, per_turn: int) -> list[dict]:
    """A Python code agent refusing `per_turn` shell calls a turn (each a failed result and gg's
    line, the message varying by turn parity), one denied board call a turn, gg's cap every 10th."""
    apis = [{"module": "files", "path": "gg.files", "functions": [{"name": "read_file", "operation": "files.read_file"}]}]
    out = [{"type": "session_started", "agentId": "root"},
           {"type": "agent_spawned", "agentId": "root", "profileId": "root", "modelId": "m", "depth": 0},
           {"type": "agent_surface", "agentId": "root", "executionMode": "responses_as_code", "tools": [],
            "apis": apis, "programLanguage": "python", "docViewTypes": "return"}]
    for turn in range(1, turns + 1):
        out.append({"type": "turn_started", "agentId": "root"})
        for _ in range(per_turn):
            out += [{"type": "api_result", "agentId": "root", "operation": "shell.shell", "ok": False,
                     "failure": "unavailable"},
                    {"type": "log", "agentId": "root", "level": "warn", "message": "the program's `gg.shell.shell` "
                     f"call was refused before it ran: {'not offered' if turn % 2 else 'no shell here'}"}]
        out += [{"type": "api_result", "agentId": "root", "operation": "board.create_issue", "ok": False,
                 "failure": "denied"},
                {"type": "log", "agentId": "root", "level": "warn",
                 "message": "the program's `gg.board.create_issue` call was refused before it ran: read-only"}]
        if turn % 10 == 0:
            out.append({"type": "log", "agentId": "root", "level": "warn",
                        "message": "2 further refused call(s) were not recorded"})
    return out


def links(html: bytes | str, attr: str) -> dict[str, list[str]]:
    """{attribute value: the hrefs of the links inside the element carrying it}, for every element with `attr`."""
    html = html.decode() if isinstance(html, bytes) else html
    out = {}
    for m in re.finditer(rf'<(\w+)[^>]*\s{attr}="([^"]*)"', html):
        tag, key = m.group(1), m.group(2)
        end = html.find(f"</{tag}>", m.end())
        inner = html[m.end():end if end > 0 else len(html)]
        out.setdefault(key.replace("&amp;", "&"), []).extend(
            h.replace("&amp;", "&") for h in re.findall(r'<a [^>]*href="([^"]*)"', inner))
    return out


def feed_rows_of(client, href: str) -> list[tuple[int, str, str]]:
    """[(seq, kind, agent)] of every row the feed at `href` (a feed page's address, with its filter) opens
    with: what its window asks runs:feed_rows for, from the run's start."""
    path, _, query = href.partition("?")
    assert client.get(href).status_code == 200
    response = client.get(path + "rows", {"after": 0, **dict(parse_qsl(query))})
    html = response.json()["html"]
    found = re.findall(r'data-seq="(\d+)" data-agent="([^"]*)" data-kind="([^"]*)"', html)
    return [(int(seq), kind, agent) for seq, agent, kind in found]
