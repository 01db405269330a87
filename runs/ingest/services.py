"""Writes (the HackSoft split: views and commands call these; reads live in `runs.pages.run_selectors`)."""

from __future__ import annotations

from django.db import transaction

from runs.across import facts as run_facts
from runs.feed import doorbell, search
from runs.ingest import writer as ingest
from runs.models import Agent, Event, Holding, ModuleStore, RejectedLine, Run
from runs.ingest.projections import Projector, event_columns, loads_record, reset_run, update_rows

REBUILD_CHUNK = 2000


class RunNameTaken(ValueError):
    pass


def unique_run_name(base: str) -> str:
    """`base`, or `base (2)`, `base (3)`... whichever is free."""
    base = (base or "run").strip()[:180] or "run"
    if not Run.objects.filter(name=base).exists():
        return base
    n = 2
    while Run.objects.filter(name=f"{base} ({n})").exists():
        n += 1
    return f"{base} ({n})"


def _check_name(name: str) -> str:
    name = (name or "").strip()
    if not name:
        raise ValueError("A run needs a name.")
    if "\x00" in name:
        raise ValueError("A run name cannot hold a NUL character.")
    return name


def run_create(*, name: str, source: str = Run.Source.IMPORT, created_by=None, **fields) -> Run:
    name = _check_name(name)
    if Run.objects.filter(name=name).exists():
        raise RunNameTaken(f"A run named {name!r} already exists.")
    return Run.objects.create(name=name, source=source, created_by=created_by, **fields)


def run_get_or_create(*, name: str, source: str = Run.Source.IMPORT, created_by=None) -> tuple[Run, bool]:
    name = _check_name(name)
    run = Run.objects.filter(name=name).first()
    if run is not None:
        return run, False
    return run_create(name=name, source=source, created_by=created_by), True


def events_append(run: Run, records, **kwargs) -> ingest.AppendResult:
    """Append gg records (dicts) to a run: the engine's way in."""
    return ingest.append(run, records, **kwargs)


def events_append_lines(run: Run, lines, **kwargs) -> ingest.AppendResult:
    return ingest.append_lines(run, lines, **kwargs)


def events_import_stream(run: Run, stream, **kwargs) -> ingest.AppendResult:
    """Append the NDJSON lines of a binary file-like object (file, upload, request body)."""
    return ingest.append_stream(run, stream, **kwargs)


def run_import_stream(*, name: str, stream, source: str = Run.Source.IMPORT, created_by=None):
    """Import a file into the run called `name`, creating it if needed: (run, created, result).
    A new run that stored nothing (a PNG, an empty file: every line rejected or none at all) is
    not kept — run is None then, and the result still says what was rejected."""
    run, created = run_get_or_create(name=name, source=source, created_by=created_by)
    result = events_import_stream(run, stream)
    if created and not result.stored:
        run_delete(run)
        return None, False, result
    return run, created, result


def run_set_status(run: Run, status: str) -> None:
    """Change a run's status outside the stream (queued, interrupted, ...) and ring the doorbell."""
    with transaction.atomic():
        Run.objects.filter(pk=run.pk).update(status=status)
        run.status = status
        doorbell.ring_on_commit(run.pk, run.last_seq, status)


def run_mark_ended(run: Run, *, by: str = "") -> bool:
    """End a live run nothing will end by itself (an imported or pushed stream that never sent
    `session_ended`): it reads `interrupted`, with who marked it. False when it already ended."""
    reason = f"marked ended by {by}" if by else "marked ended by an operator"
    with transaction.atomic():
        if not Run.objects.filter(pk=run.pk, status__in=(Run.Status.QUEUED, Run.Status.RUNNING)).update(
                status=Run.Status.INTERRUPTED, end_reason=reason):
            return False
        run.status, run.end_reason = Run.Status.INTERRUPTED, reason
        doorbell.ring_on_commit(run.pk, run.last_seq, run.status)
    return True


def run_delete(run: Run) -> dict:
    """Delete a run and everything stored for it: events, rejected lines, projections and its rows of
    the search index. One bulk delete per table (no event is loaded), in one transaction; open feeds
    of the run hear it from the doorbell. Returns what went: ``{"events": n, "agents": m, ...}``."""
    pk = run.pk
    with transaction.atomic():
        search.forget(pk)
        gone = {
            "events": Event.objects.filter(run_id=pk).delete()[0],
            "rejected_lines": RejectedLine.objects.filter(run_id=pk).delete()[0],
            "holdings": Holding.objects.filter(agent__run_id=pk).delete()[0],
        }
        Agent.objects.filter(run_id=pk).update(parent=None, predecessor=None)
        gone["agents"] = Agent.objects.filter(run_id=pk).delete()[0]
        gone["stores"] = ModuleStore.objects.filter(run_id=pk).delete()[0]
        Run.objects.filter(pk=pk).delete()
        doorbell.ring_on_commit(pk, run.last_seq, "deleted")
    return gone


def rebuild_projections(run: Run, *, chunk: int = REBUILD_CHUNK) -> dict:
    """Throw the projections of `run` away and fold its stored log again, in seq order, with the same
    `Projector` the write path uses. Event columns the fold computes are recomputed too.

    The full-text index (runs.feed.search) is rebuilt from the log too.

    Returns ``{"events": n, "columns_fixed": m}``.
    """
    fixed = 0
    total = 0
    with transaction.atomic():
        run = Run.objects.select_for_update().get(pk=run.pk)
        before = run.status
        Agent.objects.filter(run=run).delete()  # holdings cascade
        ModuleStore.objects.filter(run=run).delete()
        reset_run(run)
        after = 0
        while True:
            events = list(
                Event.objects.filter(run=run, seq__gt=after)
                .order_by("seq")
                .only("id", "seq", "raw", "type", "agent_id", "timestamp", "operation", "tool_name", "ok", "failure", "turn")[:chunk]
            )
            if not events:
                break
            projector = Projector(run)
            parsed = []
            for e in events:
                try:
                    obj = loads_record(e.raw)
                except ValueError:
                    obj = None
                cols = event_columns(obj) if isinstance(obj, dict) else (e.type, None, e.agent_id, e.timestamp, e.operation, e.tool_name, e.ok, e.failure)
                parsed.append(cols)
            projector.preload([c[1] for c in parsed if c[1] is not None])
            changed = []
            for e, cols in zip(events, parsed):
                etype, rec, agent_id, ts, operation, tool_name, ok, failure = cols
                turn = projector.apply(e.seq, etype, rec)
                new = (etype, agent_id, ts, operation, tool_name, ok, failure, turn)
                old = (e.type, e.agent_id, e.timestamp, e.operation, e.tool_name, e.ok, e.failure, e.turn)
                if new != old:
                    (e.type, e.agent_id, e.timestamp, e.operation, e.tool_name, e.ok, e.failure, e.turn) = new
                    changed.append(e)
            if changed:
                update_rows(
                    Event,
                    changed,
                    ["type", "agent_id", "timestamp", "operation", "tool_name", "ok", "failure", "turn"],
                )
                fixed += len(changed)
            projector.flush(save_run=False)
            total += len(events)
            after = events[-1].seq
        run.last_seq = after
        search.reindex(run.pk)
        run.rejected_count = RejectedLine.objects.filter(run=run).count()
        run.save()
        run_facts.refresh(run)
        if run.status != before:
            doorbell.ring_on_commit(run.pk, run.last_seq, run.status)
    return {"events": total, "columns_fixed": fixed}
