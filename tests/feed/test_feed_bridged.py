"""A legacy program call bridged as a tool pair inside its api_call bracket (issue 20, item 10): gg's
feed folds the tool's arguments into the CALL row and its summary into the RESULT row, and still
counts the tool (console.md §1.4 steps 2-5; stream.md §10). Streams authored here."""

import pytest

from runs.feed.filters import FeedFilter
from runs.feed.history import page
from runs.feed.html import row_html
from runs.feed.state import Ev, FeedState
from runs.feed.windows import FeedRenderer
from runs.ingest.writer import append
from runs.models import Agent, Event, Run
from runs.pages.agents import agent_surface_counts
from runs.pages.report import build_report
from tests.feed_helpers import seqs

pytestmark = pytest.mark.django_db

BRIDGED = [
    {"type": "session_started"},
    {"type": "agent_surface", "executionMode": "responses_as_code", "tools": ["read_file", "write_file", "finish"]},
    {"type": "turn_started"},
    {"type": "api_call", "object": "fs", "function": "readFile"},
    {"type": "tool_call", "name": "read_file", "args": {"path": "a.txt"}},
    {"type": "tool_result", "name": "read_file", "ok": True, "summary": "12 lines"},
    {"type": "api_result", "object": "fs", "function": "readFile", "ok": True},
    {"type": "api_call", "object": "fs", "function": "writeFile"},
    {"type": "tool_call", "name": "write_file", "args": {"path": "b.txt"}},
    {"type": "tool_result", "name": "write_file", "ok": False, "summary": "denied", "failure": "refused"},
    {"type": "api_result", "object": "fs", "function": "writeFile", "ok": False, "failure": "refused"},
    {"type": "api_call", "object": "docs", "function": "search"},  # no tool behind it
    {"type": "api_result", "object": "docs", "function": "search", "ok": True},
    {"type": "code_execution", "ok": True, "toolCalls": 2, "logs": []},
    {"type": "tool_call", "name": "read_file", "args": {"path": "c.txt"}},  # outside any bracket: its own row
]


def stored(name, records=BRIDGED):
    run = Run.objects.create(name=name)
    append(run, records)
    return run


def shown(rows):
    return [(r.label, r.detail, r.args) for r in rows if r.kind != "raw"][2:]  # past session, turn


def test_the_bridged_tool_folds_into_the_call_and_result_rows():
    run = stored("bridged")
    rows, _ = FeedRenderer(run.pk).next_batch(0)
    assert shown(rows) == [
        ("call", "fs.readFile", '{"path":"a.txt"}'),
        ("result", "fs.readFile: 12 lines", ""),
        ("call", "fs.writeFile", '{"path":"b.txt"}'),
        ("result ✗", "fs.writeFile: denied", ""),
        ("call", "docs.search", ""),
        ("result", "docs.search", ""),
        ("tool", "read_file", '{"path":"c.txt"}'),
    ]


def test_the_rows_are_the_same_read_from_any_cursor_or_filtered():
    run = stored("bridged-cursor")
    whole, _ = FeedRenderer(run.pk).next_batch(0)
    by_seq = {r.seq: (r.label, r.detail, r.args) for r in whole}
    for cursor in range(1, len(BRIDGED)):  # resumed mid-bracket: the state (FeedState.at) knows what it absorbed
        rows, _ = FeedRenderer(run.pk).next_batch(cursor, limit=1 + cursor % 3)
        assert [(r.label, r.detail, r.args) for r in rows] == [by_seq[r.seq] for r in rows]
    calls = page(run.pk, FeedFilter.parse({"kind": ["call"]}), after=0)
    assert 'fs.readFile: 12 lines' in calls.html and "{&quot;path&quot;:&quot;a.txt&quot;}" in calls.html


def test_the_bridged_tool_is_counted_as_gg_counts_it(viewer_client):
    run = stored("bridged-counts")
    root = Agent.objects.get(run=run, agent_id="root")
    # the tool counted under its name (gg's toolCalls), and its failure under the tools; the api
    # calls under theirs, never summed; each agent call counted once on its own surface
    assert root.tool_calls == {"read_file": 2, "write_file": 1}
    assert root.api_calls == {"fs.readFile": 1, "fs.writeFile": 1, "docs.search": 1}
    assert root.tool_failures == {"refused": 1} and root.api_failures == {"refused": 1}
    assert root.call_count == 3
    run.refresh_from_db()
    assert run.call_count == 4  # three api calls and the tool call outside a bracket
    tools = {t["name"]: t["calls"] for t in agent_surface_counts(root)["tools"]}
    assert tools == {"read_file": 2, "write_file": 1, "finish": 0}
    doc = build_report(run)
    assert doc["agents"][0]["calls"] == 3 and doc["run"]["counts"]["calls"] == 4
    assert {t["name"]: t["calls"] for t in doc["agents"][0]["surface"]["tools"]}["read_file"] == 2


@pytest.mark.parametrize("span_fold", [0, 10**9], ids=["each row's bracket", "the span's brackets"])
def test_a_filtered_page_of_many_brackets_shows_their_rows_as_the_whole_feed_does(span_fold, monkeypatch):
    """Failed results whose summary is the tool result their bracket absorbed, calls whose arguments
    are the bridged tool call's, among brackets no row of the page reads: each filtered page's rows
    are the whole feed's rows for those records, whether it folds each row's bracket or its span's."""
    from runs.feed import history

    monkeypatch.setattr(history, "SPAN_FOLD", span_fold)
    monkeypatch.setattr(history, "TERMS", 3)  # the open brackets' tool pairs read three rows a query
    records = BRIDGED[:3]
    for i in range(60):
        failing = i % 7 == 3
        records += [{"type": "api_call", "object": "fs", "function": "writeFile", **({"note": "kiwi"} if i % 4 else {})},
                    {"type": "tool_call", "name": "write_file", "args": {"path": f"{i}.txt"}},
                    {"type": "tool_result", "name": "write_file", "ok": True, "summary": f"wrote {i}"},
                    {"type": "api_result", "object": "fs", "function": "writeFile", "ok": not failing},
                    {"type": "tool_call", "name": "read_file", "args": {"path": f"{i}.md"}},
                    {"type": "tool_result", "name": "read_file", "ok": i % 5 != 1, "summary": f"read {i}"}]
    run = stored(f"bridged-many-{span_fold}", records)
    events = [Ev._make(e) for e in Event.objects.filter(run=run).order_by("seq").values_list(*Ev._fields)]
    full = {r.seq: r for r in FeedRenderer(run.pk, FeedState.at(run.pk, 0)).rows(events)}
    # kiwi: calls whose results the page does not show, each read before the agent's next call
    for query in ({"failed": ["1"]}, {"kind": ["call"]}, {"kind": ["tool"]}, {"q": ["kiwi"]}):
        got = page(run.pk, FeedFilter.parse(query), rows=500)
        shown = seqs(got.html)
        assert len(shown) >= 8 and got.html == "".join(row_html(full[s]) for s in shown)
    failed = page(run.pk, FeedFilter.parse({"failed": ["1"]}), rows=500).html
    assert "fs.writeFile: wrote 3" in failed and "read_file: read 1" in failed


def test_a_filtered_page_folds_a_few_events_a_row_however_far_apart_its_rows(monkeypatch):
    """Failures a thousand records apart, among tool pairs and brackets: the failed page folds the
    brackets its rows sit in, not the span between them, and shows what the whole feed shows."""
    from runs.feed import history

    records = BRIDGED[:3]
    for i in range(8):
        records += [{"type": "api_call", "object": "fs", "function": "writeFile"},
                    {"type": "tool_call", "name": "write_file", "args": {"path": f"{i}.txt"}},
                    {"type": "tool_result", "name": "write_file", "ok": True, "summary": f"wrote {i}"},
                    {"type": "api_result", "object": "fs", "function": "writeFile", "ok": False}]
        for j in range(250):
            records += [{"type": "api_call", "operation": "files.read_file"},
                        {"type": "api_result", "operation": "files.read_file", "ok": True},
                        {"type": "tool_call", "name": "read_file", "args": {"path": f"{j}.md"}},
                        {"type": "tool_result", "name": "read_file", "ok": True, "summary": "ok"}]
    run = stored("bridged-far", records)
    folded, read = [], history._with_lines

    def counted(context):
        events = read(context)
        folded.extend(events)
        return events

    monkeypatch.setattr(history, "_with_lines", counted)
    got = page(run.pk, FeedFilter.parse({"failed": ["1"]}), rows=500)
    events = [Ev._make(e) for e in Event.objects.filter(run=run).order_by("seq").values_list(*Ev._fields)]
    full = {r.seq: r for r in FeedRenderer(run.pk, FeedState.at(run.pk, 0)).rows(events)}
    shown = seqs(got.html)
    assert len(shown) == 8 and got.html == "".join(row_html(full[s]) for s in shown)
    assert "fs.writeFile: wrote 7" in got.html and len(folded) <= 4 * len(shown) < 8_000
