"""The feed page (its controls and an empty window the script fills) and the pages of rows it reads:
the tail over the socket (runs.feed.consumer.FeedConsumer), the rest over HTTP (runs.feed.history)."""

from django.http import JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.feed import checkpoints, history
from runs.feed.filters import FeedFilter
from runs.feed.rows import KINDS
from runs.pages.common import run_context

WINDOW_ROWS = 250  # rows the page keeps in the DOM, whatever the run's size (~17 nodes each)
AGENTS_LISTED = 500  # agents the filter offers as a list; past that it takes a typed agent id


@require_GET
def run_feed(request, pk):
    run = run_or_404(pk)
    flt = FeedFilter.parse(request.GET)
    query = flt.query()
    query = f"?{query}" if query else ""
    # Where the window opens: a seq, turn or time in the URL (a shared address), else the end.
    jump = {k: request.GET[k][:40] for k in ("seq", "turn", "time") if request.GET.get(k)}
    return render(request, "runs/feed.html", run_context(
        run, "feed",
        **_controls(run, flt),
        kinds=KINDS,
        rows_url=reverse("runs:feed_rows", args=[run.pk]) + query,
        controls_url=reverse("runs:feed_controls", args=[run.pk]) + query,
        socket_path=f"/ws/runs/{run.pk}/feed/" + query,
        window_rows=WINDOW_ROWS,
        jump=jump,
    ))


@require_GET
def feed_controls(request, pk):
    """What the controls offer and the footer counts, as the run stands now: a live run's page reads
    them again whenever its header does (feed.js), so new agents, operations and failure classes
    can be filtered on without a reload."""
    run = run_or_404(pk)
    flt = FeedFilter.parse(request.GET)
    return render(request, "runs/_feed_controls.html", {"run": run, **_controls(run, flt)})


def _controls(run, flt):
    operations, agents = set(), []
    for agent_id, api_calls, tool_calls in run.agents.values_list("agent_id", "api_calls", "tool_calls"):
        operations.update(api_calls or {}, tool_calls or {})
        if len(agents) <= AGENTS_LISTED:
            agents.append(agent_id)
    # The failure classes the run counted, and one typed into the URL (so the form shows what is applied).
    failures = {*(run.tool_failures or {}), *(run.api_failures or {}), *([flt.failure] if flt.failure else [])}
    return {"agents": agents if len(agents) <= AGENTS_LISTED else None, "operations": sorted(operations),
            "failures": sorted(failures), "filter": flt, "counts": record_counts(run)}


def record_counts(run):
    """{records, rows, panel}: the run's stored records, how many of them the feed gives a row of
    their own (every type but the panel kinds and the host's twins, `has_row`) and how many drive
    panels only — from the last feed checkpoint and the events since, whatever the run's size."""
    rows = checkpoints.row_count(run.pk, run.last_seq)
    return {"records": run.last_seq, "rows": rows, "panel": max(run.last_seq - rows, 0)}


def _int(value, name):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a whole number, not {value!r}.") from None


@require_GET
def feed_rows(request, pk):
    """A page of rows as JSON (history.Page): ?after=N / ?before=N / ?seq=N / ?turn=N / ?time=T, or
    the end of the run; with the feed's filter fields."""
    run = run_or_404(pk)
    flt = FeedFilter.parse(request.GET)
    get = request.GET
    try:
        if "turn" in get or "time" in get:
            turn = _int(get["turn"], "A turn") if "turn" in get else None
            seq = history.jump_seq(run.pk, turn=turn, time=get.get("time"), agent=flt.agent)
            if seq is None:
                what = f"turn {turn}" if turn is not None else f"record at or after {get.get('time')!r}"
                return JsonResponse({"error": f"This run has no {what}."}, status=404)
            return JsonResponse(history.page(run.pk, flt, after=seq - 1).as_dict())
        if "seq" in get:
            return JsonResponse(history.page(run.pk, flt, after=max(0, _int(get["seq"], "A seq") - 1)).as_dict())
        if "after" in get:
            return JsonResponse(history.page(run.pk, flt, after=max(0, _int(get["after"], "after"))).as_dict())
        if "before" in get:
            return JsonResponse(history.page(run.pk, flt, before=max(1, _int(get["before"], "before"))).as_dict())
    except ValueError as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    return JsonResponse(history.page(run.pk, flt).as_dict())
