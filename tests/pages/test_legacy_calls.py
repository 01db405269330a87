"""Older streams read as they did then (issue 20, "Older streams"): a program's `api_call{object,
function}` calls, with the tool each bracket bridged, are attributed to the tools behind them — gg's
pre-operation join — on the agent's surface and in the report. The repository's legacy recording and
a stream authored here."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Agent, Run
from runs.pages.agents import agent_surface_counts
from runs.pages.common import run_agents
from runs.pages.common import agent_values
from runs.pages.profiles import PROFILE_FIELDS, profile_rows
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


def legacy_profile_stream():
    """An older capability set (profiles keyed by `id`) whose code agent reported its surface both
    as tools and as apis (mid-era), and whose program calls ({object, function}, one with an
    operation) each bridged the tool behind them."""
    def pair(obj, fn, tool, op=None):
        named = {"object": obj, "function": fn, **({"operation": op} if op else {})}
        return [{"type": "api_call", **named}, {"type": "tool_call", "name": tool, "args": {}},
                {"type": "tool_result", "name": tool, "ok": True}, {"type": "api_result", **named, "ok": True}]
    return [
        {"type": "session_started", "capabilitySet": {"agents": [{"id": "coder", "modelId": "vendor/old"}]}},
        {"type": "agent_spawned", "slot": "coder", "modelId": "vendor/old", "depth": 0},
        {"type": "agent_surface", "executionMode": "responses_as_code", "tools": ["read_file", "write_file", "finish"],
         "apis": [{"module": "files", "path": "gg.files", "functions": [
             {"name": "readFile", "operation": "files.read_file"}, {"name": "writeFile", "operation": "files.write_file"}]}]},
        {"type": "turn_started"},
        *pair("fs", "readFile", "read_file"), *pair("fs", "readFile", "read_file"),
        *pair("fs", "writeFile", "write_file", op="files.write_file"),
        {"type": "api_call", "object": "docs", "function": "search"},  # nothing bridged behind it
        {"type": "api_result", "object": "docs", "function": "search", "ok": True},
    ]


def test_a_legacy_profile_lists_each_program_call_once(viewer_client):
    run = Run.objects.create(name="legacy-chips")
    append(run, legacy_profile_stream())
    run.refresh_from_db()
    [row] = profile_rows(run, agent_values(run, PROFILE_FIELDS))
    assert [row] == profile_rows(run, run_agents(run))
    assert row["key"] == "coder" and row["instances"] == 1
    # each call once, on the tool behind it; not again under files.write_file, nor files.read_file 0×
    assert [(o["name"], o["calls"]) for o in row["offered"]] == [("finish", 0), ("read_file", 2), ("write_file", 1)]
    assert row["calls_per_response"] == 4  # the program's four calls, on its own surface
    html = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    assert "read_file 2×" in html and "write_file 1×" in html and "files.write_file" not in html


def test_a_legacy_agents_surface_counts_each_program_call_once(viewer_client):
    """The agent page reads the same stream the way the profile chips do (common.calls_once): each
    call once, on the tool its bracket bridged; a function reached only through a tool has no
    figure of its own (not a false 0×), and only what bridged no tool is outside the surface."""
    run = Run.objects.create(name="legacy-surface")
    append(run, legacy_profile_stream())
    root = Agent.objects.get(run=run, agent_id="root")
    surface = agent_surface_counts(root)
    assert surface["tool_keyed"]
    assert [(t["name"], t["calls"], [v["call"] for v in t["via"]]) for t in surface["tools"]] == [
        ("read_file", 2, ["fs.readFile"]), ("write_file", 1, ["files.write_file"]), ("finish", 0, [])]
    assert [(fn["operation"], fn["calls"]) for fn in surface["apis"][0]["functions"]] == [
        ("files.read_file", None), ("files.write_file", None)]
    assert [(c["name"], c["calls"]) for c in surface["unoffered_calls"]] == [("docs.search", 1)]
    counted = sum(t["calls"] for t in surface["tools"]) + sum(c["calls"] for c in surface["unoffered_calls"])
    assert counted == root.call_count == 4
    html = viewer_client.get(reverse("runs:agent", args=[run.pk, "root"])).content.decode()
    assert 'data-tool="read_file"' in html and 'data-operation="files.read_file"' in html
    assert 'id="tool-keyed"' in html and "0×</td><td><code class=\"ident\">gg.files" not in html
    outside = html[html.index('id="unoffered-calls"'):].split("</table>")[0]
    assert "docs.search" in outside and "fs.readFile" not in outside and "write_file" not in outside
