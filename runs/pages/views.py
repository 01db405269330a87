"""The run pages: the runs list, the overview, agents, one agent, stores, divergences, refusals, arms, and
the JSON report. Thin: every read is a selector in `runs.pages.selectors` (shared with
`runs.pages.report`); the frame (header, tabs) comes from `run_context` below.

While a run is live each page re-fetches itself every few seconds (htmx polling of `#run-page`,
see templates/runs/run_page.html); the poll stops once a response shows the run ended.
"""

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from runs.ingest.api import readable_run
from runs.models import Run
from runs.pages import run_selectors, selectors as sel
from runs.pages.report import build_report


def run_context(run: Run, tab: str, **extra) -> dict:
    """The context every page extending runs/run_base.html needs (the header and the tab bar)."""
    return {"run": run, "tab": tab, "header": run_selectors.run_header(run), **extra}


@require_GET
def run_list(request):
    page = run_selectors.run_list_page(request.GET.get("page"))
    return render(request, "runs/run_list.html", {"page": page})


@require_GET
def run_detail(request, pk):
    run = get_object_or_404(Run, pk=pk)
    context = run_context(
        run, "overview", profiles=run_selectors.run_profiles(run), rejected_lines=run_selectors.run_rejected_lines(run)
    )
    context["clocks"] = run_selectors.run_clocks(run, duration=context["header"]["duration"])
    return render(request, "runs/run_detail.html", context)


def _run(pk) -> Run:
    return get_object_or_404(Run, pk=pk)


@require_GET
def run_agents(request, pk):
    run = _run(pk)
    agents = sel.run_agents(run)
    rows = [{"row": row, "failed": sel.failed_calls(row.agent), "surface": sel.call_surface(row.agent)}
            for row in sel.agent_forest(agents)]
    return render(request, "runs/agents.html", run_context(run, "agents", rows=rows))


@require_GET
def agent_detail(request, pk, agent_id):
    run = _run(pk)
    agent = run.agents.filter(agent_id=agent_id).select_related("parent", "predecessor").first()
    if agent is None:
        raise Http404(f"Run {run.name!r} has no agent {agent_id!r}.")
    surface = sel.agent_surface_counts(agent)
    programs, more_programs = sel.agent_programs(run, agent)
    return render(request, "runs/agent.html", run_context(
        run, "agents", agent=agent, surface=surface, call_surface=sel.call_surface(agent),
        not_offered=sel.reference_not_offered(agent, surface), holdings=sel.agent_holdings(agent),
        programs=programs, more_programs=more_programs, context=sel.agent_context_bands(run, agent),
    ))


@require_GET
def run_stores(request, pk):
    run = _run(pk)
    stores = sel.store_index(run, sel.run_agents(run), sel.run_holdings(run))
    return render(request, "runs/stores.html", run_context(run, "stores", groups=sel.stores_by_kind(stores)))


@require_GET
def run_divergences(request, pk):
    run = _run(pk)
    holdings = sel.run_holdings(run)
    divergences = sel.run_divergences(run, sel.run_agents(run), holdings)
    return render(request, "runs/divergences.html", run_context(
        run, "divergences", divergences=divergences, has_rosters=bool(holdings)))


@require_GET
def run_refusals(request, pk):
    run = _run(pk)
    return render(request, "runs/refusals.html", run_context(
        run, "refusals", refusals=sel.run_refusals(run, sel.run_agents(run))))


@require_GET
def run_arms(request, pk):
    run = _run(pk)
    return render(request, "runs/arms.html", run_context(
        run, "arms", comparison=sel.arms_comparison(sel.run_agents(run))))


@login_not_required
@require_GET
def api_report(request, run):
    """GET /api/runs/<run>/report: the run report (runs.pages.report) for a logged-in user or a token."""
    found, refused = readable_run(request, run)
    if refused:
        return refused
    return JsonResponse(build_report(found), json_dumps_params={"ensure_ascii": False})
