"""Divergences (spec/stream.md §7.4): declared (capability set, gg's defaults) vs observed."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import writer as ingest
from runs.models import Holding, Run, RunFacts
from runs.pages.common import run_agents, run_holdings
from runs.pages.divergences import DIVERGENCES_SHOWN, divergence_count, run_divergences
from runs.pages.profile_modules import NOTES_SHOWN
from tests.pages_helpers import get, load, reads_of, rows
from tests.paths import GG_FIXTURES

pytestmark = pytest.mark.django_db


def memories(module_id, origin, scope=None, enabled=True):
    return {"kind": "memories", "moduleId": module_id, "enabled": enabled, "origin": origin, "writable": True,
            "scope": scope}


def spawn(agent, profile, rows, parent=None):
    env = {"agentId": agent, **({"parentAgentId": parent} if parent else {})}
    return [{"type": "agent_spawned", **env, "profileId": profile, "depth": 1 if parent else 0},
            {"type": "agent_modules", **env, "modules": rows}]


def profile(slug, scope=None, memories_on=True):
    params = {"scope": scope} if scope else {}
    return {"slug": slug, "name": slug.title(),
            "capabilities": [{"id": "memories", "enabled": memories_on, "params": params}]}


def divergences(records, capability_set=None):
    run = Run.objects.create(name=f"d{Run.objects.count()}")
    opening = [{"type": "session_started", "agentId": "root", **({"capabilitySet": capability_set} if capability_set else {})}]
    ingest.append(run, opening + records)
    run.refresh_from_db()
    found = run_divergences(run, run_agents(run), run_holdings(run))
    assert divergence_count(Run.objects.get(pk=run.pk)) == len(found)
    return found


def test_inherited_scope_resolved_to_created_is_one_divergence():
    found = divergences(spawn("root", "lead", [memories("memories-0", "created")])
                        + spawn("a1", "helper", [memories("memories-1", "created", "inherited")], parent="root"),
                        {"agents": [profile("lead"), profile("helper", "inherited")]})
    assert [(d["kind"], d["agentId"], d["declared"], d["observed"]) for d in found] == [
        ("inherited_fell_back", "a1", "scope: inherited", "origin: created (memories-1)")]
    assert found[0]["cause"].endswith(".") and found[0]["moduleKind"] == "memories"


def test_inherited_that_did_inherit_is_not_a_divergence():
    assert divergences(spawn("root", "lead", [memories("memories-0", "created")])
                       + spawn("a1", "helper", [memories("memories-0", "inherited", "inherited")], parent="root"),
                       {"agents": [profile("lead", "shared"), profile("helper", "inherited")]}) == []


def test_default_scope_is_isolated_and_a_linked_fork_reaches_two_holders():
    records = spawn("root", "lead", [memories("memories-0", "created")]) + [
        {"type": "agent_transition", "agentId": "root", "kind": "fork", "toAgentId": "root.f", "profileId": "lead",
         "modules": [{"kind": "memories", "disposition": "linked", "fromModuleId": "memories-0",
                      "toModuleId": "memories-0"}]}
    ] + spawn("root.f", "lead", [memories("memories-0", "forked")], parent="root")
    found = divergences(records, {"agents": [profile("lead")]})  # no scope written: gg's default
    assert [(d["kind"], d["agentId"], d["declared"]) for d in found] == [
        ("isolated_reached_several", "root.f", "scope: isolated")]
    assert "2 concurrent holders (root, root.f)" in found[0]["observed"]


def test_a_transferred_holder_hands_on_rather_than_shares():
    records = spawn("root", "lead", [memories("memories-0", "created")]) + [
        {"type": "agent_transition", "agentId": "root", "kind": "exec", "toAgentId": "next", "profileId": "lead",
         "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": "memories-0",
                      "toModuleId": "memories-0"}]}
    ] + spawn("next", "lead", [memories("memories-0", "transferred")])
    assert divergences(records, {"agents": [profile("lead", "isolated")]}) == []


def test_shared_split_over_stores_and_a_swapped_carried_store():
    records = spawn("w1", "writer", [memories("memories-2", "profile")]) + [
        {"type": "agent_transition", "agentId": "w1", "kind": "exec", "toAgentId": "w2", "profileId": "writer",
         "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": "memories-2",
                      "toModuleId": "memories-3"}]}
    ] + spawn("w2", "writer", [memories("memories-3", "transferred")])
    found = divergences(records, {"agents": [profile("writer", "shared")]})
    assert sorted((d["kind"], d["agentId"]) for d in found) == [("carried_swapped", "w2"), ("shared_split", "w2")]
    split = next(d for d in found if d["kind"] == "shared_split")
    assert split["observed"] == "2 stores (memories-2, memories-3)"


def test_shared_on_one_store_and_disabled_memories_are_quiet():
    records = (spawn("root", "writer", [memories("memories-0", "profile")])
               + spawn("a1", "writer", [memories("memories-0", "profile")], parent="root")
               + spawn("a2", "other", [memories("", "created", enabled=False)], parent="root"))
    assert divergences(records, {"agents": [profile("writer", "shared"), profile("other", memories_on=False)]}) == []


def test_declared_from_the_holder_when_the_configuration_does_not_describe_the_profile():
    found = divergences(spawn("a1", "unknown", [memories("memories-5", "created", "read-only")]))
    assert [(d["kind"], d["declared"]) for d in found] == [("inherited_fell_back", "scope: read-only")]


def test_no_rosters_no_divergences_even_with_a_declared_scope():
    records = [{"type": "agent_spawned", "agentId": "root", "profileId": "lead"},
               {"type": "memory_state", "agentId": "root", "moduleId": "memories-0", "memories": []},
               {"type": "memory_state", "agentId": "a1", "moduleId": "memories-0", "memories": []}]
    assert divergences(records, {"agents": [profile("lead", "isolated")]}) == []


def test_no_rosters_no_swap_divergence_and_no_badge_either():
    # a carried row with two ids, but no agent_modules anywhere: the page shows "no rosters", so
    # neither the list nor the badge may count a divergence
    records = [{"type": "agent_spawned", "agentId": "w1", "profileId": "writer"},
               {"type": "agent_transition", "agentId": "w1", "kind": "exec", "toAgentId": "w2", "profileId": "writer",
                "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": "memories-2",
                             "toModuleId": "memories-3"}]},
               {"type": "agent_spawned", "agentId": "w2", "profileId": "writer"}]
    assert divergences(records, {"agents": [profile("writer", "shared")]}) == []


def test_rosters_without_memories_still_show_a_swapped_carried_store(viewer_client):
    # The page, the badge and the runs list's facts read only the memories rows of the rosters; a run
    # whose rosters hold none still reported rosters, so its swapped store is a divergence on each.
    tasks = [{"kind": "tasks", "moduleId": "tasks-0", "enabled": True, "origin": "created"}]
    records = spawn("w1", "writer", tasks) + [
        {"type": "agent_transition", "agentId": "w1", "kind": "exec", "toAgentId": "w2", "profileId": "writer",
         "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": "memories-2",
                      "toModuleId": "memories-3"}]}
    ] + spawn("w2", "writer", tasks)
    found = divergences(records, {"agents": [profile("writer", "shared")]})
    assert [(d["kind"], d["agentId"]) for d in found] == [("carried_swapped", "w2")]
    run = Run.objects.latest("pk")
    assert RunFacts.objects.get(run=run).divergences == 1
    html = get(viewer_client, "divergences", run.pk)
    assert 'data-divergence="carried_swapped"' in html and 'id="no-rosters"' not in html


def test_roster_rows_are_the_rows_the_orm_reads():
    run = Run.objects.create(name="roster-rows")
    ingest.append(run, [{"type": "session_started", "agentId": "root"}]
                  + spawn("root", "lead", [memories("memories-0", "created", "isolated"),
                                           {"kind": "tasks", "moduleId": "tasks-0", "enabled": False,
                                            "origin": "created", "writable": False, "ownership": "owned"}])
                  + spawn("a1", "helper", [memories("memories-0", "inherited", "inherited")], parent="root"))
    fields = ["pk"] + [f.attname for f in Holding._meta.concrete_fields if not f.primary_key]
    read = [[getattr(h, f) for f in fields] + [h.agent.agent_id] for h in run_holdings(run, run_agents(run))]
    assert len(read) == 3 and read == [[getattr(h, f) for f in fields] + [h.agent.agent_id] for h in
                                       Holding.objects.filter(agent__run=run).order_by("agent__first_seq", "position")]
    assert [h.agent.agent_id for h in run_holdings(run, run_agents(run), kind="memories")] == ["root", "a1"]
    # The enabled rows alone, in roster order (the Agents and Stores tabs' read): the disabled tasks row is not.
    assert [(h.agent.agent_id, h.kind) for h in run_holdings(run, run_agents(run), enabled_only=True)] == [
        ("root", "memories"), ("a1", "memories")]


def test_a_described_profile_that_does_not_declare_memories_has_nothing_to_diverge_from():
    # the holder reports scope inherited + origin created, but its captured profile lists no
    # memories capability: only where the configuration declares the capability (console.md §1.6)
    bare = {"slug": "plain", "name": "Plain", "capabilities": [{"id": "shell", "enabled": True, "params": {}}]}
    records = spawn("root", "plain", [memories("memories-0", "created", "inherited")])
    assert divergences(records, {"agents": [bare]}) == []


def test_divergences_page_and_badge(viewer_client, run):
    html = get(viewer_client, "divergences", run.pk)
    found = rows(html, "data-divergence")
    assert sorted(k for k, _ in found) == ["carried_swapped", "inherited_fell_back", "isolated_reached_several",
                                           "shared_split"]
    text = dict(found)
    assert "scope: inherited → origin: created (memories-1)" in text["inherited_fell_back"]
    assert "carried memories-2 → holds memories-3" in text["carried_swapped"]
    assert 'id="divergence-badge"' in html and ">4</span>" in html
    assert 'id="divergence-badge"' in get(viewer_client, "agents", run.pk)  # the badge rides on every tab


def test_the_badge_on_a_tab_that_lists_no_agent_reads_no_agent(viewer_client, run):
    """The badge of the Project tab comes from the run's folded facts (one row), not from reading
    every agent; with the facts behind the run's last record it is counted from the agents again."""
    with CaptureQueriesContext(connection) as read:
        html = get(viewer_client, "project", run.pk)
    assert 'id="divergence-badge"' in html and ">4</span>" in html
    assert not [q["sql"] for q in read.captured_queries if '"runs_agent"."usage"' in q["sql"]]  # a whole row
    RunFacts.objects.filter(run=run).update(seq=run.last_seq - 1, divergences=0)
    with CaptureQueriesContext(connection) as read:
        html = get(viewer_client, "project", run.pk)
    assert 'id="divergence-badge"' in html and ">4</span>" in html
    assert [q["sql"] for q in read.captured_queries if '"runs_agent"."usage"' in q["sql"]]


def test_the_divergences_page_reads_the_same_few_queries_whatever_the_agents(viewer_client):
    """It reads of each agent only what the divergences need (a whole agent row was most of its time on
    a run of thousands), and a field read beyond them would cost a query an agent."""
    counts = []
    for n in (3, 40):
        records = []
        for i in range(n):  # each holds a store of its own, declared inherited: one divergence each
            records += spawn(f"a{i}", "lead", [memories(f"memories-{i}", "created")])
        found = divergences(records, {"agents": [profile("lead", scope="inherited")]})
        run = Run.objects.get(name=f"d{len(counts)}")
        html, queries = reads_of(viewer_client, "divergences", run)
        counts.append(queries)
        assert len(found) == n and len(rows(html, "data-divergence")) == n
    assert counts[0] == counts[1]


def test_a_run_without_rosters_shows_no_divergence(viewer_client):
    legacy = load("legacy", "legacy.ndjson")
    mock = Run.objects.create(name="mock")
    ingest.append_lines(mock, (GG_FIXTURES / "real-mock-session.ndjson").read_bytes().splitlines())
    html = get(viewer_client, "divergences", mock.pk)
    assert 'id="no-rosters"' in html and 'id="divergence-badge"' not in html
    assert 'data-divergence=' not in get(viewer_client, "divergences", legacy.pk)


def test_an_agent_stored_between_the_pages_two_reads_waits_for_the_next_read():
    # A live run's engine stores a subagent and its roster after the page has read the agents and
    # before it reads the holdings (the feed page of a launched run answered 500 on it).
    run = Run.objects.create(name="between-reads")
    ingest.append(run, [{"type": "session_started", "agentId": "root"}]
                  + spawn("root", "lead", [memories("memories-0", "created")]))
    agents = run_agents(run)
    ingest.append(run, spawn("a1", "helper", [memories("memories-1", "created", "inherited")], parent="root"))
    held = run_holdings(run, agents)
    assert [(h.agent.agent_id, h.module_id) for h in held] == [("root", "memories-0")]
    assert [(h.agent.agent_id, h.module_id) for h in run_holdings(run, run_agents(run))] == [
        ("root", "memories-0"), ("a1", "memories-1")]


def test_many_divergences_are_listed_a_page_at_a_time_and_counted_by_kind(viewer_client):
    records = []
    for i in range(450):  # each holds a store of its own, declared inherited: one divergence each
        records += spawn(f"a{i:03d}", "lead", [memories(f"memories-{i}", "created")])
    assert len(divergences(records, {"agents": [profile("lead", scope="inherited")]})) == 450
    run = Run.objects.get(name="d0")
    html = get(viewer_client, "divergences", run.pk)
    assert [a for a, _ in rows(html, "data-agent")] == [f"a{i:03d}" for i in range(DIVERGENCES_SHOWN)]
    assert "Divergences 1–200 of 450" in html and 'href="?divergences=200">after' in html
    assert dict(rows(html, "data-kind")) == {"inherited_fell_back": "inherited_fell_back"}
    assert '<span class="tag" data-kind="inherited_fell_back">inherited_fell_back</span> 450' in html
    last = get(viewer_client, "divergences", run.pk, query="divergences=400")
    assert [a for a, _ in rows(last, "data-agent")] == [f"a{i:03d}" for i in range(400, 450)]
    # The Agents tab's profile names the first few and links the rest here.
    agents = get(viewer_client, "agents", run.pk)
    assert agents.count('class="note divergence-note"') == NOTES_SHOWN and "450 divergences" in agents
    assert f'<a class="divergences-more" href="/runs/{run.pk}/divergences/">and 440 more divergences</a>' in agents


def test_the_page_reads_the_rosters_of_the_divergences_it_shows_alone(viewer_client):
    """Each divergence links the roster record that reported it; the page reads those agents' roster
    seqs, not every roster of the run (on a run of 8,278 agents, each one's line)."""
    records = []
    for i in range(3):  # each holds a store of its own, declared inherited: one divergence each
        records += spawn(f"a{i}", "lead", [memories(f"memories-{i}", "created")])
    for i in range(10):  # each inherits a0's: none diverges
        records += spawn(f"b{i}", "lead", [memories("memories-0", "inherited")], parent="a0")
    found = divergences(records, {"agents": [profile("lead", scope="inherited")]})
    assert sorted(d["agentId"] for d in found) == ["a0", "a1", "a2"]
    run = Run.objects.order_by("-pk").first()
    with CaptureQueriesContext(connection) as read:
        html = get(viewer_client, "divergences", run.pk)
    assert html.count('class="divergence-record"') == 3
    rosters = [q["sql"] for q in read.captured_queries if "'agent_modules'" in q["sql"]]
    assert rosters and all("'a0'" in sql and "'b0'" not in sql for sql in rosters)
