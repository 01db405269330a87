"""A run's Overview tab (templates/runs/run_detail.html): the clocks, the declared profiles and the
rejected lines. Tests: tests/pages/test_overview.py, tests/ingest/test_ingest_pages.py. (The runs list
is runs.across.)
"""

from __future__ import annotations

from datetime import timedelta

from django.db.models import Count, Q, Sum
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.stream.profiles import profile_key, profiles
from runs.stream.record import as_list
from runs.models import Agent, RejectedLine, Run
from runs.pages.common import get_run, run_context

@require_GET
def overview_page(request, pk):
    run = get_run(pk)
    context = run_context(run, "overview", profiles=run_profiles(run), rejected_lines=run_rejected_lines(run))
    context["clocks"] = run_clocks(run, duration=context["header"]["duration"])
    return render(request, "runs/run_detail.html", context)


def run_clocks(run: Run, *, duration=None) -> dict:
    """The overview's clocks (one query): runtime (against the declared ``maxRuntimeSecs``),
    waiting — the agents' closed blocked suspensions summed — and how many agents stand in each
    status now. ``{"runtime", "max_runtime", "waiting", "blocked_now", "by_status": [(status, n)]}``"""
    rows = Agent.objects.filter(run=run).values("status").annotate(
        n=Count("id"), waiting=Sum("suspended"), blocked=Count("id", filter=Q(blocked_since__isnull=False)))
    waiting, blocked_now, by_status = timedelta(0), 0, []
    for row in rows.order_by("status"):
        by_status.append((row["status"], row["n"]))
        waiting += row["waiting"] or timedelta(0)
        blocked_now += row["blocked"]
    limits = run.capability_set.get("limits") if isinstance(run.capability_set, dict) else None
    max_runtime = limits.get("maxRuntimeSecs") if isinstance(limits, dict) else None
    if not isinstance(max_runtime, (int, float)) or isinstance(max_runtime, bool):
        max_runtime = None
    return {"runtime": duration, "max_runtime": timedelta(seconds=max_runtime) if max_runtime else None,
            "waiting": waiting, "blocked_now": blocked_now, "by_status": by_status}


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
