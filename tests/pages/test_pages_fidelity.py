"""Pages as gg's console reads the run (issue 20): store lifetimes as the stream tells them (items 8, 9:
a fork's copy starts at its `copied` row, a store swapped away is dropped) and the per-profile view."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run
from runs.pages.common import run_agents, run_holdings
from runs.pages.stores import store_index

pytestmark = pytest.mark.django_db


def mem(module_id, origin):
    return {"type": "agent_modules", "modules": [{"kind": "memories", "moduleId": module_id, "enabled": True, "origin": origin}]}


def test_a_forks_copy_starts_copied_and_a_swapped_away_store_is_dropped(viewer_client):
    run = Run.objects.create(name="lifetimes")
    append(run, [
        {"type": "session_started"},
        {**mem("memories-0", "created"), "agentId": "root"},
        {"type": "agent_transition", "agentId": "root", "kind": "fork", "toAgentId": "root.f1", "modules": [
            {"kind": "memories", "disposition": "copied", "fromModuleId": "memories-0", "toModuleId": "memories-1"}]},
        {**mem("memories-1", "copied"), "agentId": "root.f1"},
        {"type": "agent_transition", "agentId": "root", "kind": "exec", "toAgentId": "agent-2", "modules": [
            {"kind": "memories", "disposition": "carried", "fromModuleId": "memories-0", "toModuleId": "memories-2"}]},
        {**mem("memories-2", "created"), "agentId": "agent-2"},
    ])
    views = {v.module_id: v for v in store_index(run, run_agents(run), run_holdings(run))}
    assert [r["event"] for r in views["memories-1"].lifetime] == ["copied"]
    assert [r["event"] for r in views["memories-0"].lifetime] == ["created", "copied", "swapped"]
    assert views["memories-0"].released_by == ["root"] and views["memories-0"].dropped is True
    assert views["memories-2"].dropped is False and views["memories-1"].dropped is False
    html = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    assert html.count('data-lifetime="dropped"') == 1


def test_the_agents_tab_reads_the_run_per_profile_including_one_that_never_ran(viewer_client):
    from runs.pages.common import agent_values
    from runs.pages.profiles import PROFILE_FIELDS, profile_rows
    run = Run.objects.create(name="per-profile")
    cs = {"agents": [{"id": "builder", "name": "Builder", "modelId": "m/one", "capabilities": [{"id": "memories"}, "shell"]},
                     {"id": "explorer", "name": "Explorer"}]}
    append(run, [
        {"type": "session_started", "capabilitySet": cs},
        {"type": "agent_surface", "executionMode": "tool_calling", "tools": ["read_file", "finish"], "withheld": ["shell"]},
        {"type": "turn_started"}, {"type": "tool_call", "name": "read_file", "args": {"path": "a"}},
        {"type": "tool_call", "name": "read_file", "args": {"path": "b"}},
        {"type": "usage", "tokens": {"uncachedInput": 30, "output": 10}, "cost": {"comparable": 0.5}},
        {"agentId": "sub-1", "type": "agent_spawned", "profileId": "builder", "parentAgentId": "root"},
        {"agentId": "sub-1", "type": "agent_surface", "executionMode": "tool_calling", "tools": ["finish"]},
        {"agentId": "sub-1", "type": "turn_started"},
        {"agentId": "sub-1", "type": "usage", "tokens": {"output": 10}, "cost": {"comparable": 0.5}},
        # Two more instances reporting sub-1's surface: read once, the three share its decoded lists.
        *({"agentId": f"sub-{i}", "type": t, "profileId": "builder", "parentAgentId": "root", "executionMode": "tool_calling",
           "tools": ["finish"]} for i in (2, 3) for t in ("agent_spawned", "agent_surface")),
    ])
    run.refresh_from_db()
    rows = profile_rows(run, agent_values(run, PROFILE_FIELDS))  # the page's read: each agent's PROFILE_FIELDS, no Agent rows
    assert rows == profile_rows(run, run_agents(run)) == profile_rows(run, list(run.agents.all()))  # nothing shared
    rows = {r["key"]: r for r in rows}
    builder, explorer = rows["builder"], rows["explorer"]
    assert (builder["instances"], builder["turns"], builder["tokens"], builder["token_share"]) == (4, 2, 50, 100)
    assert builder["calls_per_response"] == 1.0 and builder["cost_share"] == 100
    assert builder["capabilities"] == ["memories", "shell"] and builder["withheld"] == ["shell"]
    assert builder["offered"] == [{"name": "finish", "instances": 4, "of": 4, "calls": 0},
                                  {"name": "read_file", "instances": 1, "of": 4, "calls": 2}]
    assert explorer["instances"] == 0
    html = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    assert "never ran" in html and 'title="offered to 1 of 4">read_file 2× (1/4)' in html
