"""The runs list's refusal counts, folded chunk by chunk from the RefusalRows each chunk stored, equal
a full fold of the run's facts, whatever the chunking and on either side of the roster's window."""

import pytest

from runs.ingest import facts as run_facts
from runs.ingest import writer as ingest
from runs.models import Run, RunFacts
from runs.pages import refusals
from tests.pages_helpers import synthetic_stream

pytestmark = pytest.mark.django_db
READ = refusals.REFUSALS_READ


def _counts(run):
    facts = RunFacts.objects.get(run=run)
    return facts.refusals, facts.refusals_by_agent


def _late_surface(records):
    """The stream with a third agent whose refusal lines come before the surface naming its calls."""
    line = ("the program's `gg.shell.shell` call was refused before it ran: not offered")
    late = [{"type": "agent_spawned", "agentId": "late", "profileId": "tool", "depth": 1},
            {"type": "turn_started", "agentId": "late"},
            {"type": "api_result", "agentId": "late", "operation": "shell.shell", "ok": False, "failure": "unavailable"},
            {"type": "log", "agentId": "late", "level": "warn", "message": line},
            {"type": "log", "agentId": "late", "level": "warn", "message": "3 further refused call(s) were not recorded"}]
    surface = {"type": "agent_surface", "agentId": "late", "executionMode": "responses_as_code", "tools": [],
               "programLanguage": "python", "apis": []}
    half = len(records) // 2
    return records[:half] + late + records[half:] + [surface] + late[1:]


@pytest.mark.parametrize("chunk_lines", [3, 50, 2000])
@pytest.mark.parametrize("window", [READ, 40])
def test_refusal_counts_folded_chunk_by_chunk_equal_a_full_fold(chunk_lines, window, monkeypatch):
    monkeypatch.setattr(refusals, "REFUSALS_READ", window)
    monkeypatch.setattr(run_facts, "REFUSALS_READ", window)
    run = Run.objects.create(name="refusals")
    ingest.append(run, _late_surface(synthetic_stream(1200)), chunk_lines=chunk_lines)
    incremental = _counts(run)
    run_facts.refresh(Run.objects.get(pk=run.pk))
    assert incremental == _counts(run)
    assert incremental[0] >= 30  # not vacuous; past the small window, its first rows only
    if window == READ:
        assert incremental[0] > 40 and "late" in incremental[1]
