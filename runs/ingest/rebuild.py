"""Rebuild: throw a run's projections away and fold its stored log again with the write path's `fold`."""

from __future__ import annotations

from django.db import transaction

from runs.ingest import facts as run_facts
from runs.ingest import fold_spans
from runs.feed import checkpoints, doorbell, search
from runs.ingest.fold import FoldRow, fold, reset_run
from runs.ingest.fold_flush import update_rows
from runs.ingest.writer import locked_run
from runs.models import Agent, Event, MemoryRevision, ModuleStore, PooledMessage, RefusalGroup, RefusalRow, RejectedLine, Run
from runs.stream.record import Decoded, RecordError, decode, loads_record

REBUILD_CHUNK = 2000
# The Event columns the fold computes (every Decoded field but the record, and the turn).
FOLDED_COLUMNS = ["type", "agent_id", "timestamp", "operation", "tool_name", "ok", "failure", "turn", "call_ms"]
STORED_COLUMNS = ["id", "seq", "raw", *FOLDED_COLUMNS]


def _stored_columns(event) -> Decoded:
    """A stored line no reader decodes (stored before a rule refused it) keeps its columns, unfolded."""
    return Decoded(event.type, None, event.agent_id, event.timestamp, event.operation, event.tool_name,
                   event.ok, event.failure)


def _decoded(event):
    """(what the index reads, `Decoded`) of a stored Event: a line no reader decodes is indexed as its
    text (as `runs.feed.search.reindex` does) and keeps its stored columns."""
    try:
        obj = loads_record(event.raw)
    except RecordError:
        return event.raw, _stored_columns(event)
    if isinstance(obj, dict):
        try:
            return obj, decode(obj)
        except RecordError:  # a type that is not a string
            pass
    return obj, _stored_columns(event)


def rebuild_projections(run: Run, *, chunk: int = REBUILD_CHUNK) -> dict:
    """Fold `run`'s stored log again, in seq order, one `fold` per `chunk` events, after emptying its
    projections; the Event columns the fold computes are recomputed too, and the run's full-text index
    (`runs.feed.search`) is brought back to what the log holds (its rows that stand are left alone).

    Returns ``{"events": n, "columns_fixed": m}``; `RunGone` for a run whose deletion was asked for.
    """
    fixed = 0
    total = 0
    with transaction.atomic():
        run = locked_run(run)
        before = run.status
        Agent.objects.filter(run=run).delete()  # holdings cascade
        ModuleStore.objects.filter(run=run).delete()
        RefusalRow.objects.filter(run=run).delete()
        RefusalGroup.objects.filter(run=run).delete()
        MemoryRevision.objects.filter(run=run).delete()
        PooledMessage.objects.filter(run=run).delete()
        fold_spans.forget(run)
        reset_run(run)
        checkpoints.forget(run.pk)
        after = 0
        pool = None
        while True:
            # Tuples, not models; a range of seqs (1..n, no gaps), not LIMIT: before ANALYZE the
            # planner would read the rest of the run for every chunk.
            events = list(Event.objects.filter(run=run, seq__gt=after, seq__lte=after + chunk).order_by("seq")
                          .values_list(*STORED_COLUMNS, named=True))
            if not events:
                break
            rows, texts = [], []
            for e in events:
                obj, decoded = _decoded(e)
                rows.append(FoldRow(e.seq, decoded))
                texts.append((e.seq, obj))
            folded = fold(run, rows, save_run=False, pool=pool)
            pool = folded.pool
            # From the objects just decoded (each line is read once); rows whose words stand are not written.
            search.index(run.pk, texts, again=True)
            changed = []
            for e, row, turn, ms in zip(events, rows, folded.turns, folded.call_ms):
                d = row.event
                new = (d.type, d.agent_id, d.timestamp, d.operation, d.tool_name, d.ok, d.failure, turn, ms)
                if new != e[3:]:  # its FOLDED_COLUMNS
                    changed.append(Event(id=e.id, **dict(zip(FOLDED_COLUMNS, new))))
            if changed:
                update_rows(Event, changed, FOLDED_COLUMNS)
                fixed += len(changed)
            checkpoints.record(run.pk, after, [(row.seq, row.event.type, row.event.agent_id) for row in rows])
            total += len(events)
            after = events[-1].seq
        search.forget(run.pk, after=after)  # what the index held past the log
        run.last_seq = after
        run.rejected_count = RejectedLine.objects.filter(run=run).count()
        run.fold_generation = Run.FOLD_GENERATION
        run.save()
        run_facts.refresh(run)
        if run.status != before:
            doorbell.ring_on_commit(run.pk, run.last_seq, run.status)
    return {"events": total, "columns_fixed": fixed}


def stale_runs() -> list[Run]:
    """The runs an older fold made, oldest first."""
    return list(Run.objects.filter(fold_generation__lt=Run.FOLD_GENERATION).order_by("pk"))
