"""The run's refusal facts and the Refusals tab read one roster, the fold's (runs.ingest.fold_refusals):
equal whatever the chunking, however far apart a run's refusals are, and equal to a rebuild."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import facts as run_facts
from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import RefusalGroup, RefusalRow, Run, RunFacts
from runs.pages.common import run_agents
from runs.pages.refusals import run_refusals
from runs.stream.refusals import _catalogue_names, names_to_operations
from tests.ingest_helpers import appended_reads
from tests.pages_helpers import synthetic_stream
from tests.streams import projection_dump

pytestmark = pytest.mark.django_db
LINE = "the program's `{}` call was refused before it ran: {}"


def _counts(run):
    facts = RunFacts.objects.get(run=run)
    return facts.refusals, facts.refusals_by_agent


def _page(run) -> tuple[int, dict]:
    """The Refusals tab's figures: its total, and per agent its groups' counts by operation (or name)."""
    roster = run_refusals(run, run_agents(run))
    return roster["refused"], {r["agent"].agent_id: {g["key"]: g["count"] for g in r["groups"]}
                               for r in roster["agents"] if r["groups"]}


def _late_surface(records):
    """The stream with a third agent whose refusal lines come before the surface naming its calls."""
    late = [{"type": "agent_spawned", "agentId": "late", "profileId": "tool", "depth": 1},
            {"type": "turn_started", "agentId": "late"},
            {"type": "api_result", "agentId": "late", "operation": "shell.shell", "ok": False, "failure": "unavailable"},
            {"type": "log", "agentId": "late", "level": "warn", "message": LINE.format("gg.shell.shell", "not offered")},
            {"type": "log", "agentId": "late", "level": "warn", "message": "3 further refused call(s) were not recorded"}]
    surface = {"type": "agent_surface", "agentId": "late", "executionMode": "responses_as_code", "tools": [],
               "programLanguage": "python", "apis": []}
    half = len(records) // 2
    return records[:half] + late + records[half:] + [surface] + late[1:]


@pytest.mark.parametrize("chunk_lines", [3, 50, 2000])
def test_refusal_counts_folded_chunk_by_chunk_equal_the_page_and_a_rebuild(chunk_lines):
    run = Run.objects.create(name="refusals")
    ingest.append(run, _late_surface(synthetic_stream(1200)), chunk_lines=chunk_lines)
    incremental, dump = _counts(run), projection_dump(run)
    assert incremental == _page(run)
    # Before the surface, gg's quoted name reads by any arm's spelling: each line pairs with its result.
    assert incremental[1]["late"] == {"shell.shell": 2}
    assert incremental[0] > 100
    run_facts.refresh(Run.objects.get(pk=run.pk))
    assert _counts(run) == incremental
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == dump and _counts(run) == incremental


@pytest.mark.parametrize("chunk_lines", [1, 20_000])
def test_an_agent_that_reported_no_surface_has_each_refusal_counted_once(chunk_lines):
    """Its lines read by whichever arm spells the quoted name (a Rust and a TypeScript spelling here),
    each paired with its failed result; a name no arm spells stays a refusal of its own."""
    run = Run.objects.create(name="no-surface")
    records = [{"type": "agent_spawned", "agentId": "w", "profileId": "worker", "depth": 1},
               {"type": "turn_started", "agentId": "w"}]
    for written, operation in [("gg::board::create_issue", "board.create_issue"), ("gg.files.readFile", "files.read_file")]:
        records += [{"type": "api_result", "agentId": "w", "operation": operation, "ok": False, "failure": "unavailable"},
                    {"type": "log", "agentId": "w", "level": "warn", "message": LINE.format(written, "not offered")}]
    records.append({"type": "log", "agentId": "w", "level": "warn", "message": LINE.format("gg.nowhere", "not offered")})
    ingest.append(run, records, chunk_lines=chunk_lines)
    want = {"w": {"board.create_issue": 1, "files.read_file": 1, "gg.nowhere": 1}}
    assert _counts(run) == (3, want) and _page(run) == (3, want)


def _refusing(turn: int, op: str, failure: str, *, line_first: bool, message: str) -> list[dict]:
    result = {"type": "api_result", "agentId": "root", "operation": op, "ok": False, "failure": failure}
    line = {"type": "log", "agentId": "root", "level": "warn", "message": LINE.format(f"gg.{op}", message)}
    return [line, result] if line_first else [result, line]


@pytest.mark.parametrize("chunk_lines", [1, 7, 20_000])
def test_refusals_far_apart_agree_between_the_facts_and_the_page(chunk_lines):
    """Refusals more than 5,000 events apart (the facts once read a 5,000-row window): the run's
    facts and the page count every one, each line matched to its result in either order, across
    chunks, and a failed call no line names (not `unavailable`) counted nowhere."""
    parts = [[r for r in synthetic_stream(8) if r["type"] != "log"]]  # its surface: root is a Python code agent
    for turn in range(1, 4):
        refusals = [{"type": "turn_started", "agentId": "root"}]
        refusals += _refusing(turn, "board.create_issue", "refused", line_first=turn % 2 == 1, message="read-only")
        refusals += _refusing(turn, "board.create_issue", "unavailable", line_first=False, message="not offered")
        refusals.append({"type": "api_result", "agentId": "root", "operation": "files.read_file", "ok": False,
                         "failure": "not-found"})
        refusals.append({"type": "api_result", "agentId": "root", "operation": "shell.shell", "ok": False,
                         "failure": "unavailable"})  # no line: still refused
        parts += [refusals, [{"type": "turn_started", "agentId": "t1"},
                             *({"type": "tool_call", "agentId": "t1", "name": "read_file", "args": {}} for _ in range(6000))]]
    run = Run.objects.create(name="far-apart")
    if chunk_lines >= sum(map(len, parts)):
        ingest.append(run, [r for part in parts for r in part], chunk_lines=chunk_lines)
    else:  # the refusals chunk by chunk, the 6,000 calls between them a chunk each (not 6,000 transactions)
        for part in parts:
            ingest.append(run, part, chunk_lines=chunk_lines if len(part) < 6000 else 6001)
    run = Run.objects.get(pk=run.pk)
    assert run.last_seq > 18_000
    want = {"root": {"board.create_issue": 6, "shell.shell": 3}}
    assert _counts(run) == (9, want) and _page(run) == (9, want)
    group = RefusalGroup.objects.get(run=run, key="board.create_issue")
    assert group.failures == {"refused": 3, "unavailable": 3}
    assert {m: n for m, (n, _) in group.messages.items()} == {"read-only": 3, "not offered": 3}
    # Each call is one entry, linked to its failed result.
    entries = RefusalRow.objects.filter(run=run, entry=True)
    assert entries.count() == 9
    assert not RefusalRow.objects.filter(run=run, kind=RefusalRow.LINE, partner__isnull=True).exists()


def _unavailable(agent_id: str) -> dict:
    """A call refused with no line naming it (`unavailable`): still a refusal."""
    return {"type": "api_result", "agentId": agent_id, "operation": "shell.shell", "ok": False, "failure": "unavailable"}


def test_a_chunk_reads_again_the_refusal_groups_of_the_agents_that_refused_in_it_only():
    run = Run.objects.create(name="refusing")
    ingest.append(run, [_unavailable("a"), _unavailable("b"), _unavailable("b")])
    with CaptureQueriesContext(connection) as read:
        ingest.append(run, [_unavailable("a")])
    groups_read = [q["sql"] for q in read.captured_queries
                   if q["sql"].startswith("SELECT") and '"runs_refusalgroup"' in q["sql"].split("WHERE")[0]]
    assert groups_read and all('"runs_refusalgroup"."agent_id" IN' in sql for sql in groups_read), groups_read
    want = (4, {"a": {"shell.shell": 2}, "b": {"shell.shell": 2}})
    assert _counts(run) == want
    run_facts.refresh(Run.objects.get(pk=run.pk))
    assert _counts(run) == want


def test_facts_a_failed_chunk_left_behind_are_folded_whole_with_the_next_chunk(monkeypatch):
    """A chunk whose facts failed leaves them at the seq before it: the next chunk's keep nothing of
    that row, or b's refusal, in the chunk that failed, would be missing from them for good."""
    run = Run.objects.create(name="behind")
    ingest.append(run, [_unavailable("a")])

    def broken(*args, **kwargs):
        raise TypeError("a shape nothing foresaw")
    monkeypatch.setattr(run_facts, "agent_sums", broken)
    ingest.append(run, [_unavailable("b")])
    monkeypatch.undo()
    assert RunFacts.objects.get(run=run).seq == 1
    ingest.append(run, [_unavailable("a")])
    assert _counts(run) == (3, {"a": {"shell.shell": 2}, "b": {"shell.shell": 1}})


def test_a_chunk_reads_the_unmatched_refusals_of_its_agents_as_ranges_of_their_index():
    """The stored rows still waiting for their partner, of the agents refusing in a chunk, are ranges of
    the `refusal_unmatched` index: SQLite walked the run's rows of each kind while the run stood outside
    the agents' terms."""
    if connection.vendor != "sqlite":
        pytest.skip("SQLite's query plan")
    run = Run.objects.create(name="unmatched")
    agents = [f"a{i}" for i in range(8)]
    ingest.append(run, [{"type": "turn_started", "agentId": a} for a in agents] + [_unavailable(a) for a in agents])
    plans = appended_reads(run, [_unavailable(a) for a in agents], "runs_refusalrow")
    assert plans and all("USING INDEX refusal_unmatched (run_id=? AND agent_id=?" in s
                         for _, searches in plans for s in searches), plans


def test_the_names_a_line_may_quote_are_kept_once_per_arm_whatever_the_languages_reported():
    """A stream's agents reporting thousands of made-up languages do not grow the per-language names."""
    for i in range(300):
        assert names_to_operations([], f"lang-{i}")["gg::board::create_issue"] == "board.create_issue"
    assert _catalogue_names.cache_info().currsize <= 12
