"""The runs list's facts after each chunk fold from the agents the chunk before left (runs.ingest.writer
carries them with the message pool): a chunk naming a few of a run's agents reads no others and sums
again only the blocks holding them, and the facts equal a fold of the whole run, chunk by chunk, after
a rebuild in between too."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import facts as run_facts
from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import Run, RunFacts
from tests.pages_helpers import synthetic_stream

FIELDS = ("search", "languages", "model_ids", "profile_slugs", "divergences", "refusals", "refusals_by_agent",
          "agents", "total_tokens", "cost", "failed_calls", "seq")


def _facts(run):
    return RunFacts.objects.filter(run=run).values(*FIELDS).get()


def _whole(run):
    run_facts.refresh(Run.objects.get(pk=run.pk))
    return _facts(run)


def _crowd(n):
    return [{"type": "turn_started", "agentId": f"crowd-{i}", "turn": 1, "profileId": "worker"} for i in range(n)]


def _reads_every_agent(queries) -> bool:
    return any('"runs_agent"."usage"' in q["sql"] and '"runs_agent"."agent_id" IN' not in q["sql"] for q in queries)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("chunk_lines", [3, 40])
@pytest.mark.parametrize("block", [4, run_facts.AGENT_BLOCK])
def test_facts_folded_from_the_carried_agents_equal_a_fold_of_the_whole_run(chunk_lines, block, monkeypatch):
    monkeypatch.setattr(run_facts, "AGENT_BLOCK", block)
    run = Run.objects.create(name="carried")
    ingest.append(run, synthetic_stream(300) + _crowd(30), chunk_lines=chunk_lines)
    with CaptureQueriesContext(connection) as read:
        ingest.append(run, [{"type": "turn_started", "agentId": "crowd-3", "turn": 2}] * 5, chunk_lines=chunk_lines)
    assert not _reads_every_agent(read.captured_queries)
    incremental = _facts(run)
    assert incremental["seq"] == 335 and incremental == _whole(run)
    rebuild.rebuild_projections(Run.objects.get(pk=run.pk))  # new agent rows, the same last seq
    ingest.append(run, [{"type": "turn_started", "agentId": "crowd-4", "turn": 2}] * 5 + _crowd(33)[31:],
                  chunk_lines=chunk_lines)
    incremental = _facts(run)
    assert incremental["seq"] == 342 and incremental == _whole(run)


@pytest.mark.django_db(transaction=True)
def test_a_process_that_carries_nothing_reads_every_agent_once_then_carries_them():
    """A run's first append in a process (a restarted server, a live run's next POST) has no agents
    carried: its facts read every agent, and those ride to the next append, which reads none but its
    own (each one-record append of a 12,620-agent run read them all: ~1 s)."""
    run = Run.objects.create(name="restarted")
    ingest.append(run, _crowd(30))
    ingest._CARRIED.clear()  # as in a new process
    one = [{"type": "turn_started", "agentId": "crowd-3", "turn": 2}]
    for reads_all in (True, False, False):
        with CaptureQueriesContext(connection) as read:
            ingest.append(run, one)
        assert _reads_every_agent(read.captured_queries) is reads_all
    assert _facts(run) == _whole(run)


@pytest.mark.django_db(transaction=True)
def test_a_chunk_sums_again_only_the_blocks_of_the_agents_it_changed(monkeypatch):
    """The agents are summed in blocks carried from chunk to chunk: a chunk of one agent's records sums
    that agent's block, not the run's 32 agents (a run of 11,500 agents summed every one, 70 ms a chunk)."""
    monkeypatch.setattr(run_facts, "AGENT_BLOCK", 4)
    summed = []
    block = run_facts._block
    monkeypatch.setattr(run_facts, "_block", lambda agents, refusals: summed.append(len(agents)) or block(agents, refusals))
    run = Run.objects.create(name="blocks")
    ingest.append(run, synthetic_stream(300) + _crowd(30))
    summed.clear()
    ingest.append(run, [{"type": "turn_started", "agentId": "crowd-3", "turn": 2}] * 5)
    assert summed == [4] and Run.objects.get(pk=run.pk).agent_count == 32
    incremental = _facts(run)
    assert incremental == _whole(run)


def _roster(agent_id, origin, module_id, scope="inherited"):
    return {"type": "agent_modules", "agentId": agent_id, "modules": [
        {"kind": "history", "moduleId": f"history-{agent_id}", "enabled": True, "origin": "created"},
        {"kind": "memories", "moduleId": module_id, "enabled": True, "origin": origin, "scope": scope}]}


@pytest.mark.django_db(transaction=True)
def test_divergences_folded_from_the_carried_roster_rows_equal_a_fold_of_the_whole_run():
    """The memories rows the divergences read ride from chunk to chunk: a chunk reads again only the
    rows of the agents whose rosters it reported, and the count follows a roster reported again and a
    profile named after its agent's roster, as a fold of the whole run counts them."""
    caps = {"agents": [{"slug": "keeper", "capabilities": [
        {"id": "memories", "enabled": True, "params": {"scope": "inherited"}}]}]}
    run = Run.objects.create(name="rosters")
    crowd = [r for i in range(20) for r in ({"type": "agent_spawned", "agentId": f"c{i}", "profileId": "keeper"},
                                            _roster(f"c{i}", "inherited", "memories-root"))]
    ingest.append(run, [{"type": "session_started", "capabilitySet": caps},
                        {"type": "agent_spawned", "agentId": "a1", "profileId": "keeper"},
                        _roster("a1", "created", "memories-a1"), *crowd])
    _append_in_steps(run, [
        ([_roster("a1", "inherited", "memories-root")], 0),  # a1 inherits after all
        ([_roster("late", "created", "memories-late", scope="isolated")], 0),  # no profile yet: its own scope holds
        ([{"type": "agent_spawned", "agentId": "late", "profileId": "keeper"}], 1),  # keeper: inherited, fell back
    ])


@pytest.mark.django_db(transaction=True)
def test_a_roster_without_memories_reported_in_a_later_chunk_still_counts_a_swapped_store():
    run = Run.objects.create(name="no-memories")
    caps = {"agents": [{"slug": "writer", "capabilities": [
        {"id": "memories", "enabled": True, "params": {"scope": "shared"}}]}]}
    ingest.append(run, [{"type": "session_started", "capabilitySet": caps},
                        {"type": "agent_spawned", "agentId": "w1", "profileId": "writer"}])
    _append_in_steps(run, [
        ([{"type": "agent_modules", "agentId": "w1", "modules": [
            {"kind": "tasks", "moduleId": "tasks-0", "enabled": True, "origin": "created"}]}], 0),
        ([{"type": "agent_transition", "agentId": "w1", "kind": "exec", "toAgentId": "w2", "profileId": "writer",
           "modules": [{"kind": "memories", "disposition": "carried", "fromModuleId": "memories-2",
                        "toModuleId": "memories-3"}]},
          {"type": "agent_spawned", "agentId": "w2", "profileId": "writer"}], 1),  # a run with rosters: a swap
    ])


def _append_in_steps(run, steps):
    """Append each step's records; its facts count the divergences given, as a fold of the whole run
    does, having read the roster rows of no agent the step did not name."""
    for records, divergences in steps:
        with CaptureQueriesContext(connection) as read:
            ingest.append(run, records)
        rosters_read = [q["sql"] for q in read.captured_queries
                        if q["sql"].startswith("SELECT") and '"runs_holding"' in q["sql"].split("WHERE")[0]]
        assert not any('"runs_holding"."kind" = ' in sql and " IN (" not in sql for sql in rosters_read), rosters_read
        assert _facts(run)["divergences"] == divergences
        assert _facts(run) == _whole(run)
