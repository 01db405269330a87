"""Older streams read as they did then (issue 20, "Older streams"): a program's `api_call{object,
function}` calls, with the tool each bracket bridged, are attributed to the tools behind them — gg's
pre-operation join — on the agent's surface and in the report. The repository's legacy recording and
a stream authored here."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Agent, Run
from runs.pages.agents import agent_surface_counts
from runs.pages.report import build_report
from tests.paths import STREAMS
from tests.streams import import_stream

pytestmark = pytest.mark.django_db


def test_the_legacy_recording_attributes_its_program_calls_to_the_tools_behind_them(viewer_client):
    run, _ = import_stream(STREAMS / "legacy.ndjson")
    root = Agent.objects.get(run=run, agent_id="root")
    surface = agent_surface_counts(root)
    assert [(t["name"], t["calls"], t["via"]) for t in surface["tools"]] == [
        ("read_file", 1, [{"call": "fs.readFile", "calls": 1}]), ("write_file", 0, []), ("finish", 0, [])]
    # fs.readFile reached an offered tool: it is read_file's, not a call outside the surface; a call
    # whose tool was not offered stays outside, under both vocabularies
    assert [(c["name"], c["calls"]) for c in surface["unoffered_calls"]] == [
        ("gg.memories.writeMemory", 1), ("write_memory", 1)]
    html = viewer_client.get(reverse("runs:agent", args=[run.pk, "root"])).content.decode()
    assert 'via <code class="ident" data-via="fs.readFile">' in html
    tools = build_report(run)["agents"][0]["surface"]["tools"]
    assert tools[0] == {"name": "read_file", "calls": 1, "via": [{"call": "fs.readFile", "calls": 1}]}


def test_one_tool_behind_several_functions_and_a_function_with_no_tool():
    run = Run.objects.create(name="legacy-join")
    pair = lambda fn, tool: [  # noqa: E731
        {"type": "api_call", "object": "fs" if fn != "openFile" else "view", "function": fn},
        {"type": "tool_call", "name": tool, "args": {"path": "a"}},
        {"type": "tool_result", "name": tool, "ok": True},
        {"type": "api_result", "object": "fs" if fn != "openFile" else "view", "function": fn, "ok": True}]
    append(run, [
        {"type": "agent_surface", "executionMode": "responses_as_code", "tools": ["read_file", "finish"]},
        {"type": "turn_started"},
        *pair("readFile", "read_file"), *pair("readTextFile", "read_file"), *pair("openFile", "read_file"),
        *pair("readFile", "read_file"),
        {"type": "api_call", "object": "docs", "function": "search"},  # nothing bridged behind it
        {"type": "api_result", "object": "docs", "function": "search", "ok": True},
    ])
    root = Agent.objects.get(run=run, agent_id="root")
    surface = agent_surface_counts(root)
    assert surface["tools"][0] == {"name": "read_file", "calls": 4, "ending": False, "via": [
        {"call": "fs.readFile", "calls": 2}, {"call": "fs.readTextFile", "calls": 1}, {"call": "view.openFile", "calls": 1}]}
    assert [c["name"] for c in surface["unoffered_calls"]] == ["docs.search"]
    assert root.call_count == 5  # on its own (api) surface, once each
