"""The per-profile view's detail (issue 20, "Per-profile view"): holdings per profile with their
sharing badge and divergences, the declared module configuration beside what was observed, the
offered surface as a union with fractions (0× kept, muted), a profile that never ran."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run
from runs.pages.common import run_agents, run_holdings
from runs.pages.divergences import run_divergences
from runs.pages.profile_modules import STORES_NAMED, declared_modules, profile_modules
from tests.pages_helpers import rows

pytestmark = pytest.mark.django_db

CAPS = {"agents": [
    {"id": "lead", "name": "Lead", "capabilities": [{"id": "memories", "params": {"scope": "inherited"}}, {"id": "tasks"}]},
    {"id": "worker", "name": "Worker", "capabilities": [
        {"id": "memories", "params": {"scope": "shared"}}, {"id": "tasks", "params": {"ownership": "owned"}}]},
    {"id": "critic", "name": "Critic", "capabilities": ["skills"]},
]}


def roster(agent, *modules, parent=None):
    rec = {"type": "agent_modules", "agentId": agent, "modules": [
        {"kind": k, "moduleId": m, "enabled": True, "origin": o, **extra} for k, m, o, extra in modules]}
    return {**rec, "parentAgentId": parent} if parent else rec


def surface(agent, tools, parent=None):
    rec = {"type": "agent_surface", "agentId": agent, "executionMode": "tool_calling", "tools": tools}
    return {**rec, "parentAgentId": parent} if parent else rec


def stream():
    return [
        {"type": "session_started", "agentId": "root", "capabilitySet": CAPS},
        {"type": "agent_spawned", "agentId": "root", "profileId": "lead", "modelId": "m/a"},
        roster("root", ("memories", "memories-0", "created", {"scope": "inherited"}), ("tasks", "tasks-0", "created", {})),
        surface("root", ["spawn_subagent", "finish"]),
        {"type": "turn_started", "agentId": "root"},
        {"type": "tool_call", "agentId": "root", "name": "spawn_subagent", "args": {}},
        *[r for i in (1, 2) for r in (
            {"type": "agent_spawned", "agentId": f"w{i}", "parentAgentId": "root", "profileId": "worker", "modelId": "m/b", "depth": 1},
            roster(f"w{i}", ("memories", "memories-1", "created" if i == 1 else "profile", {"scope": "shared"}),
                   ("tasks", f"tasks-{i}", "created", {"ownership": "unowned"}), parent="root"),
            surface(f"w{i}", ["read_file", "write_file", "finish"] if i == 1 else ["read_file", "finish"], parent="root"),
            {"type": "turn_started", "agentId": f"w{i}", "parentAgentId": "root"},
            {"type": "tool_call", "agentId": f"w{i}", "parentAgentId": "root", "name": "read_file", "args": {"path": "x"}},
        )],
    ]


def test_declared_modules_take_the_params_and_gg_defaults():
    assert declared_modules(CAPS["agents"][0]) == {"memories": {"ownership": "owned", "scope": "inherited"},
                                                   "tasks": {"ownership": "owned"}}
    assert declared_modules(CAPS["agents"][2]) == {"skills": {"ownership": "owned"}}
    assert declared_modules({"capabilities": [{"id": "memories", "enabled": False}]}) == {}


def test_each_profile_reads_its_holdings_badges_and_divergences():
    run = Run.objects.create(name="profile-modules")
    append(run, stream())
    run.refresh_from_db()
    agents, holdings = run_agents(run), run_holdings(run)
    detail = profile_modules(run, agents, holdings, run_divergences(run, agents, holdings))
    lead = {k["kind"]: k for k in detail["lead"]["kinds"]}
    worker = {k["kind"]: k for k in detail["worker"]["kinds"]}
    assert lead["memories"]["declared"] == {"ownership": "owned", "scope": "inherited"}
    assert (lead["memories"]["stores"], lead["memories"]["badge"], lead["memories"]["origins"]) == (["memories-0"], "instance", ["created"])
    # the two workers share one memories store (agent-scoped) but hold a task list each (per instance)
    assert (worker["memories"]["stores"], worker["memories"]["badge_label"], worker["memories"]["holders"]) == (["memories-1"], "agent-scoped", 2)
    assert (worker["tasks"]["stores"], worker["tasks"]["badge_label"]) == (["tasks-1", "tasks-2"], "per instance")
    assert worker["tasks"]["ownership"] == ["unowned"] and worker["tasks"]["declared"] == {"ownership": "owned"}
    # lead: inheritance fell back; worker: held on terms it did not declare
    assert [d["kind"] for d in detail["lead"]["divergences"]] == ["inherited_fell_back"]
    assert [(d["kind"], d["declared"], d["observed"]) for d in detail["worker"]["divergences"]] == [
        ("ownership", "ownership: owned", "ownership: unowned")]
    # critic never ran: its declaration is there, nothing held
    assert [(k["kind"], k["declared"], k["stores"]) for k in detail["critic"]["kinds"]] == [("skills", {"ownership": "owned"}, [])]


def test_the_agents_tab_shows_the_detail_per_profile(viewer_client):
    run = Run.objects.create(name="profile-detail")
    append(run, stream())
    html = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    details = dict(rows(html, "data-profile-detail"))
    assert details["critic"].startswith("Critic never ran")
    assert "2 instances · 1 divergence" in details["worker"]
    assert "ownership: owned → ownership: unowned" in details["worker"]
    assert 'data-badge="agent" >' not in html and 'data-badge="agent">agent-scoped</span>' in html
    offered = rows(html, "data-offered")
    # the union over both workers: read_file offered to both and called twice, write_file to one and never called
    assert ("read_file", "read_file 2× offered to 2 of 2") in offered
    assert ("write_file", "write_file 0× offered to 1 of 2") in offered
    assert '<tr data-offered="write_file" class="muted" title="offered, 0 calls">' in html


def test_a_kind_of_many_stores_names_twenty_and_links_the_rest(viewer_client):
    run = Run.objects.create(name="many-stores")
    modules = [{"kind": "tasks", "moduleId": f"tasks-{i:02d}", "enabled": True, "origin": "created", "writable": True}
            for i in range(STORES_NAMED + 4)]
    append(run, [{"type": "agent_spawned", "agentId": "root", "profileId": "lead", "depth": 0},
                 {"type": "agent_modules", "agentId": "root", "modules": modules}])
    html = viewer_client.get(reverse("runs:agents", args=(run.pk,))).content.decode()
    assert html.count(f'href="/runs/{run.pk}/stores/#store-tasks-') == STORES_NAMED
    assert f'#store-tasks-{STORES_NAMED - 1:02d}"' in html and f'#store-tasks-{STORES_NAMED:02d}"' not in html
    assert f'<a class="kind-more" href="/runs/{run.pk}/stores/?kind=tasks#kind-tasks">and 4 more</a>' in html
