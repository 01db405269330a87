"""Run-level reads (the HackSoft split: views call these; writes live in `runs.ingest.services`):
a run's usage, duration and header (the run by reference: `runs.access`; its stored lines out:
`runs.ingest.stored`). Each tab's own reads
sit beside its view (`runs/pages/<tab>.py`).

Each function here runs a bounded number of queries whatever the number of events: the run header
reads only the rolled-up columns the fold keeps on `Run`.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.utils import timezone

from runs.models import Agent, Event, Run
from runs.stream.record import parse_timestamp
from runs.stream.usage import add_usage, empty_usage, total_tokens


# ---------------------------------------------------------------------------------------------
# Runs


def run_usage(run: Run) -> dict:
    """The usage header: the sum of the run's usage deltas, or — only when no delta arrived — the
    sum of its latest slot_usage rollups (spec/stream.md §7.5). Never both.

    ``{"tokens": {class: n|None}, "cost": {comparable, actual}, "total_tokens": n|None,
    "source": "deltas" | "slot_usage" | None, "by_slot": [{profileId, modelId, tokens, cost}]}``
    """
    usage = run.usage or {}
    if usage.get("deltas"):
        by_slot = list((usage.get("by_slot") or {}).values())
        tokens, cost, source = usage.get("tokens") or {}, usage.get("cost") or {}, "deltas"
    elif run.slot_usage:
        by_slot = list(run.slot_usage.values())
        (tokens, cost), source = _sum_rollups(by_slot), "slot_usage"
    else:
        return {"tokens": {}, "cost": {}, "total_tokens": None, "source": None, "by_slot": []}
    return {
        "tokens": tokens,
        "cost": cost,
        "total_tokens": total_tokens(tokens),
        "source": source,
        "by_slot": by_slot,
    }


def _sum_rollups(rows) -> tuple[dict, dict]:
    """(tokens, cost) summed over slot_usage rollups, null-aware as the deltas are (`add_usage`)."""
    acc = empty_usage()
    for row in rows:
        add_usage(acc, row.get("tokens"), row.get("cost"))
    return acc["tokens"], acc["cost"]


def run_duration(run: Run, *, last_timestamp: str | None = None):
    """ended - started; for a run without session_ended, the last stored record's stamp - started
    (or now - started when that cannot be read), and now - started for a live run launched here (its
    clock is this server's, and a turn in progress stamps nothing until it stores). None before any
    timestamp."""
    if run.started_at is None:
        return None
    end = run.ended_at
    if end is None and run.is_live and run.source in (Run.Source.ENGINE, Run.Source.GG):
        end = timezone.now()
    if end is None and last_timestamp:
        end = parse_timestamp(last_timestamp)
    if end is None:
        end = timezone.now() if run.is_live else None
    if end is None:
        return None
    return max(end - run.started_at, timedelta(0))


def stale_before():
    """A running run whose last record (or, with none, its creation) is older than this is stale:
    settings.RUN_STALE_SECONDS without a record (the header, the runs list and its filter alike)."""
    return timezone.now() - timedelta(seconds=settings.RUN_STALE_SECONDS)


def agent_durations(agents: list[Agent]) -> dict:
    """{agent id: seconds from the agent's first stamped record to its latest}, off the stamps the
    fold keeps on each Agent row (no log read); None for an agent with no stamp it could read."""
    out = {}
    for agent in agents:
        start, end = parse_timestamp(agent.first_timestamp), parse_timestamp(agent.last_timestamp)
        out[agent.agent_id] = max((end - start).total_seconds(), 0.0) if start and end else None
    return out


def run_liveness(run: Run, last_received=None) -> dict:
    """How the run stands, as the header says it: ``{"state", "since"}`` — its status, or "stale"
    for a running run whose last record (or, with none, its creation) is older than
    settings.RUN_STALE_SECONDS: a stream that stopped without session_ended; and "queued" for a
    live run whose session_started has not arrived (gg: "queued — waiting for a runner"), with why."""
    if run.status == Run.Status.RUNNING:
        since = last_received or run.created_at
        if since and since < stale_before():
            return {"state": "stale", "since": since, "why": ""}
    if run.status in (Run.Status.RUNNING, Run.Status.QUEUED) and run.session_started_seq is None:
        why = "waiting for a runner: no session_started yet"
        if run.last_seq:
            why += f" ({run.last_seq} record{'s' if run.last_seq != 1 else ''} before it)"
        return {"state": "queued", "since": None, "why": why}
    return {"state": run.status, "since": None, "why": ""}


def run_header(run: Run) -> dict:
    """Every figure the run header shows (at most one query: the last record's stamps)."""
    last_ts = last_received = None
    if run.ended_at is None and run.last_seq:
        last_ts, last_received = (
            Event.objects.filter(run=run, seq=run.last_seq).values_list("timestamp", "received_at").first()
            or (None, None)
        )
    return {
        "liveness": run_liveness(run, last_received),
        "duration": run_duration(run, last_timestamp=last_ts),
        "usage": run_usage(run),
        "tool_failure_count": sum(run.tool_failures.values()) if run.tool_failures else 0,
        "api_failure_count": sum(run.api_failures.values()) if run.api_failures else 0,
    }
