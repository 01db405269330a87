"""Incremental projection == a rebuild from the event log, on every fixture, whatever the chunking."""

import random

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import writer as ingest
from runs.ingest import fold_pool, rebuild
from runs.models import Agent, Event, ModuleStore, Run
from tests.streams import STREAM_FIXTURES, import_stream, projection_dump

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("name", sorted(STREAM_FIXTURES))
@pytest.mark.parametrize("chunk_lines", [1, 7, 2000])
def test_incremental_equals_rebuild(name, chunk_lines):
    run, result = import_stream(STREAM_FIXTURES[name], chunk_lines=chunk_lines)
    assert result.stored > 0
    incremental = projection_dump(run)
    stats = rebuild.rebuild_projections(run)
    assert stats == {"events": result.stored, "columns_fixed": 0}
    rebuilt = projection_dump(run)
    assert rebuilt == incremental
    assert rebuilt["agents"]  # the comparison is not vacuous


@pytest.mark.parametrize("name", sorted(STREAM_FIXTURES))
def test_chunking_does_not_change_the_projection(name):
    whole, _ = import_stream(STREAM_FIXTURES[name], "whole")
    expected = projection_dump(whole)
    # the same lines appended in random-sized pieces, each its own append call
    lines = STREAM_FIXTURES[name].read_bytes().split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    rng = random.Random(name)
    run = Run.objects.create(name="pieces")
    i = 0
    while i < len(lines):
        n = rng.randint(1, 9)
        ingest.append_lines(run, lines[i : i + n], first_line_number=i + 1, ignore_final_empty=False)
        i += n
    got = projection_dump(run)
    assert got == expected


def test_rebuild_repairs_damaged_projections_and_event_columns():
    run, _ = import_stream(STREAM_FIXTURES["multi_agent"])
    expected = projection_dump(run)
    Agent.objects.filter(run=run, agent_id="agent-2").update(status="running", api_calls={}, parent=None)
    ModuleStore.objects.filter(run=run, module_id="memories-0").delete()
    Event.objects.filter(run=run, seq__in=[10, 20]).update(turn=99, operation="bogus")
    Run.objects.filter(pk=run.pk).update(turn_count=0, status="running", usage={})
    stats = rebuild.rebuild_projections(run)
    assert stats["columns_fixed"] == 2
    assert projection_dump(run) == expected


def test_rebuild_command(capsys):
    run, _ = import_stream(STREAM_FIXTURES["multi_agent"], "demo")
    before = projection_dump(run)
    Agent.objects.filter(run=run).delete()
    call_command("rebuild_projections", "demo")
    out = capsys.readouterr().out
    assert "demo: rebuilt from 248 events (7 agents, 11 turns, 42 calls" in out
    assert projection_dump(run) == before
    call_command("rebuild_projections", str(run.pk))
    assert projection_dump(run) == before


def test_rebuild_of_a_run_without_session_end_leaves_it_running():
    run, _ = import_stream(STREAM_FIXTURES["malformed_tail"])
    rebuild.rebuild_projections(run)
    run.refresh_from_db()
    assert run.status == "running" and run.rejected_count == 5 and run.last_seq == 6


def test_a_run_an_older_fold_made_says_so_until_it_is_rebuilt(client, admin_user):
    """Runs stored before a projection was added read as stale (the header says how to rebuild),
    `rebuild_projections --stale` and the bootstrap at every `scripts/serve` fold them again."""
    import io

    from django.urls import reverse

    run, _ = import_stream(STREAM_FIXTURES["legacy"])
    fresh, _ = import_stream(STREAM_FIXTURES["multi_agent"])
    assert not run.stale and run.fold_generation == Run.FOLD_GENERATION
    Run.objects.filter(pk=run.pk).update(fold_generation=Run.FOLD_GENERATION - 1)
    client.force_login(admin_user)
    page = client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="run-stale"' in page and f"rebuild_projections {run.name}" in page
    assert 'id="run-stale"' not in client.get(reverse("runs:detail", args=[fresh.pk])).content.decode()

    out = io.StringIO()
    call_command("bootstrap", stdout=out)
    assert "Runs folded by an older console: rebuilding 1." in out.getvalue()
    assert f"{run.name}: rebuilt from" in out.getvalue() and fresh.name + ":" not in out.getvalue()
    run.refresh_from_db()
    assert not run.stale
    assert 'id="run-stale"' not in client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    out = io.StringIO()
    call_command("rebuild_projections", stale=True, stdout=out)
    assert out.getvalue() == ""


def _windows(agents=("root", "agent-1"), turns=12):
    """Each agent's turns, one list of records a turn: the window grows by the last reply and a tool
    result, is compacted every fifth turn, and now and then points at a message never defined."""
    out = []
    windows = {a: [(f"{a}-sys", "system", 300)] for a in agents}
    for t in range(1, turns + 1):
        for a in agents:
            window, fresh = windows[a], []
            if t % 5 == 0:
                window[1:] = [(f"{a}-sum{t}", "history", 40)]
                fresh.append(window[1])
            reply = (f"{a}-a{t}", "assistant", 20 + t)
            fresh += [window[0]] if t == 1 else []
            fresh.append(reply)
            pointers = window + ([(f"{a}-ghost", "history", None)] if t % 3 == 0 else [])
            turn = [{"type": "turn_started", "agentId": a}]
            turn += [{"type": "context_message", "agentId": a, "id": i, "role": "system" if s == "system" else "user",
                      "content": i, "tokens": n, "toolCalls": [], "images": []} for i, s, n in fresh]
            turn.append({"type": "prompt", "agentId": a, "request": [{"id": i, "source": s} for i, s, _ in pointers],
                         "responseId": reply[0], "tokens": {"uncachedInput": 100 * t, "cachedInput": 7, "output": 3}})
            window += [reply, (f"{a}-t{t}", "file_view", 50)]
            turn.append({"type": "context_message", "agentId": a, "id": f"{a}-t{t}", "role": "tool", "tokens": 50,
                         "label": f"src/{t}.py", "toolCalls": [], "images": []})
            out.append(turn)
    return out


@pytest.mark.django_db(transaction=True)
def test_message_pool_carried_between_appends_equals_one_append_and_rebuild():
    """The writer hands each run's next chunk the pool its last committed chunk left (rows as written):
    turn by turn appends, a rebuild between two of them, equal one whole append and a rebuild; and a
    chunk whose pointers name only rows the last chunk touched reads no pooled message."""
    turns = _windows()
    whole = Run.objects.create(name="whole")
    ingest.append(whole, [r for turn in turns for r in turn])
    pieces = Run.objects.create(name="pieces")
    for i, turn in enumerate(turns):
        ingest.append(pieces, turn, chunk_lines=3)
        if i == len(turns) // 2:
            rebuild.rebuild_projections(pieces)
    assert projection_dump(pieces)["pool"] == projection_dump(whole)["pool"]
    last = turns[-1][-2]  # the last prompt: every row it names was touched by the chunk before
    with CaptureQueriesContext(connection) as queries:
        ingest.append(pieces, [last])
        ingest.append(whole, [last])
    assert not [q for q in queries if q["sql"].startswith("SELECT") and "runs_pooledmessage" in q["sql"]]
    incremental = projection_dump(pieces)
    assert incremental == {**projection_dump(whole), "run": incremental["run"]}
    rebuild.rebuild_projections(pieces)
    assert projection_dump(pieces) == incremental
    assert len(incremental["pool"]) > 50 and any(m["spans"] and len(m["spans"]) > 1 for m in incremental["pool"].values())


def _pool_reads(queries):
    return [q for q in queries if q["sql"].startswith("SELECT") and "runs_pooledmessage" in q["sql"]]


@pytest.mark.django_db(transaction=True)
def test_a_pool_begun_with_the_run_reads_no_pooled_message_until_it_lets_one_go(monkeypatch):
    """From a run's first record the writer's pool holds every row the run has: a pointer to a row it
    does not hold names a new one, and nothing is read. A pool that has let rows go (past ROWS_KEPT)
    reads those its chunks name again, and folds what the whole pool folds."""
    records = [r for turn in _windows() for r in turn]
    held = Run.objects.create(name="held")
    with CaptureQueriesContext(connection) as queries:
        ingest.append(held, records, chunk_lines=5)
    assert not _pool_reads(queries)
    expected = projection_dump(held)

    monkeypatch.setattr(fold_pool, "ROWS_KEPT", 10)
    let_go = Run.objects.create(name="let go")
    with CaptureQueriesContext(connection) as queries:
        ingest.append(let_go, records, chunk_lines=5)
    assert _pool_reads(queries)
    got = projection_dump(let_go)
    assert got == {**expected, "run": got["run"]}
    rebuild.rebuild_projections(let_go)
    assert projection_dump(let_go) == got
