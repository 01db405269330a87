"""The runs list's facts after each chunk fold from the agents the chunk before left (runs.ingest.writer
carries them with the message pool): a chunk naming a few of a run's agents reads no others, and
the facts equal a fold of the whole run, chunk by chunk, after a rebuild in between too."""

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
def test_facts_folded_from_the_carried_agents_equal_a_fold_of_the_whole_run(chunk_lines):
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
