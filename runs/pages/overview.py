"""A run's Overview tab (templates/runs/run_detail.html): the runtime card, the rates, the cost and
tokens widgets, the machines that drove it (runs.pages.machines), the declared profiles and the
rejected lines. Tests: tests/pages/test_overview.py,
tests/pages/test_costs_rates.py, tests/ingest/test_ingest_pages.py. (The runs list is runs.across.)
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import timedelta

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.stream.profiles import profile_key, profiles
from runs.stream.record import as_list, parse_timestamp
from runs.models import Agent, RejectedLine, Run
from runs.pages.common import run_context
from runs.pages.machines import run_machines
from runs.stream.call_times import pools


@require_GET
def overview_page(request, pk):
    run = run_or_404(pk)
    context = run_context(run, "overview", profiles=run_profiles(run), rejected_lines=run_rejected_lines(run))
    context["clocks"] = run_clocks(run, duration=context["header"]["duration"])
    context["rates"], context["costs"] = run_rates(run), context["header"]["spend"]
    context["machines"] = run_machines(run)
    return render(request, "runs/run_detail.html", context)


def run_clocks(run: Run, *, duration=None) -> dict:
    """The overview's runtime card (one query, a row per agent): runtime (against the declared
    ``maxRuntimeSecs``); active — each agent's own working span (its first to its latest stamp)
    minus its blocked waits, summed; waiting — the agents' closed blocked suspensions summed; and
    how many agents stand in each status now. ``{"runtime", "max_runtime", "runtime_share",
    "active", "waiting", "blocked_now", "by_status": [(status, n)]}``"""
    rows = Agent.objects.filter(run=run).values_list("status", "suspended", "blocked_since", "first_timestamp",
                                                     "last_timestamp")
    waiting, active, blocked_now, by_status = timedelta(0), timedelta(0), 0, Counter()
    for status, suspended, blocked_since, first, last in rows:
        by_status[status] += 1
        waiting += suspended or timedelta(0)
        blocked_now += blocked_since is not None
        start, end = parse_timestamp(first), parse_timestamp(last)
        if start is not None and end is not None:
            open_wait = max(end - blocked_since, timedelta(0)) if blocked_since is not None else timedelta(0)
            active += max(end - start - (suspended or timedelta(0)) - open_wait, timedelta(0))
    limits = run.capability_set.get("limits") if isinstance(run.capability_set, dict) else None
    max_runtime = limits.get("maxRuntimeSecs") if isinstance(limits, dict) else None
    if not isinstance(max_runtime, (int, float)) or isinstance(max_runtime, bool) or max_runtime <= 0:
        max_runtime = None
    share = duration.total_seconds() / max_runtime if duration is not None and max_runtime else None
    return {"runtime": duration, "max_runtime": timedelta(seconds=max_runtime) if max_runtime else None,
            "runtime_share": share, "active": active, "waiting": waiting, "blocked_now": blocked_now,
            "by_status": sorted(by_status.items())}


def run_rates(run: Run) -> dict:
    """Generated tokens/s pooled over the run and per model — tokens over time inside model calls,
    from each agent's pooled model time the fold keeps (Agent.timing, runs.stream.call_times; one
    query, no log read) — and calls per response pooled over the run (calls over turns, never a
    mean of ratios). {"throughput": pooled, "models": {usage model id: pooled}, "calls_per_response"}."""
    every, models = [0, 0, 0], defaultdict(lambda: [0, 0, 0])
    # Only the pooling ("tp") out of each agent's timing: its call times were most of the JSON decoded.
    for model_id, tp in Agent.objects.filter(run=run).values_list("model_id", "timing__tp"):
        figures, by_model = pools({"tp": tp} if tp else {}, model_id)
        every[:] = every[0] + figures["tokens"], every[1] + figures["ms"], every[2] + figures["turns"]
        # per model as gg pools it: by each usage record's model, not the agent's
        for model, f in by_model.items():
            acc = models[model]
            acc[:] = acc[0] + f["tokens"], acc[1] + f["ms"], acc[2] + f["turns"]
    return {"throughput": _rate(*every), "models": {m: _rate(*f) for m, f in sorted(models.items()) if m and f[2]},
            "calls_per_response": run.call_count / run.turn_count if run.turn_count else None}


def _rate(tokens, ms, turns):
    return {"tokens": tokens, "ms": ms, "turns": turns, "per_second": tokens / (ms / 1000) if ms else None}


def run_profiles(run: Run) -> list[dict]:
    """The profiles the run declared (session_started.capabilitySet.agents), for display."""
    out = []
    for agent in profiles(run.capability_set):
        caps = [c.get("id") for c in as_list(agent.get("capabilities")) if isinstance(c, dict) and c.get("enabled")]
        out.append(
            {
                "slug": profile_key(agent),
                "name": agent.get("name") or "",
                "model": agent.get("modelId") or agent.get("modelSlot") or "",
                "capabilities": [c for c in caps if isinstance(c, str)],
            }
        )
    return out


def run_rejected_lines(run: Run, *, limit: int = 100):
    return list(RejectedLine.objects.filter(run=run).order_by("line_number", "id")[:limit])
