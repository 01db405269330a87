"""Across runs: the runs list, the selection's actions, comparisons, the analysis and saved views.

Thin: the reads are runs.across.{filters, run_list, compare, analysis}; the one write of their own
is a saved view (runs.across.saved); a run is deleted through runs.ingest.deletion and its lines
read through runs.ingest.stored.
"""

from __future__ import annotations

import csv
import io

from django.contrib import messages
from django.contrib.auth.decorators import login_not_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST

from runs.across import analysis, charts, compare, filters, run_list as listing, saved
from runs.access import (may_delete_runs, may_launch, may_remove_saved, readable_run, removal_refused, return_path,
                          run_resolve)
from runs.ingest import deletion, stored
from runs.models import Run, SavedView
from runs.pages.common import confirm_page, paged
from runs.stream.record import whole_number

EXPORT_MAX = 50  # runs per export archive
# The comparison page's pairs of agents and unpaired agents of each side a page (two runs of thousands
# of agents were 6 MB of page); its JSON (api_compare) lists them all.
PAIRS_SHOWN, UNPAIRED_SHOWN = 50, 100
PAGED_LISTS = ("pairs", "only_a", "only_b")  # the address keys of the comparison page's pages
RUNS_OFFERED = 200  # the latest runs the blank form's run fields suggest


@require_GET
def run_list(request):
    f = filters.parse(request.GET)
    page = listing.run_list_page(f, sort=request.GET.get("sort", ""), after=request.GET.get("after", ""),
                                 before=request.GET.get("before", ""))
    keep = f.params()
    columns = [{"key": key, "label": label, "sort": _toggle(key, page.sort),
                "active": page.sort.lstrip("-") == key, "desc": page.sort.startswith("-")}
               for key, (label, _expr) in listing.COLUMNS.items()]
    return render(request, "across/run_list.html", {
        "page": page, "filter": f, "choices": filters.choices(), "columns": columns,
        "keep": urlencode(keep), "keep_sorted": urlencode([*keep, ("sort", page.sort)]),
        "problems": f.problems + ([page.problem] if page.problem else []),
        "saved": saved.of_kind(SavedView.Kind.LIST), "save_query": urlencode([*keep, ("sort", page.sort)]),
        **_deletions(),
    })


@require_GET
def run_deletions(request):
    """The runs list's line on deletions still going (polled by it while there are any)."""
    return render(request, "across/_deletions.html", _deletions())


def _deletions():
    runs, total = listing.deletions_pending()
    return {"deletions": runs, "deletions_total": total}


def _toggle(column: str, current: str) -> str:
    """A column header's sort: descending first, ascending when already descending."""
    return column if current == f"-{column}" else f"-{column}"


@require_POST
def runs_selected(request):
    """The list's selection: compare (exactly two), export (a zip of their streams) or delete (a
    confirmation page first; `confirm` deletes, each run through runs.ingest.deletion)."""
    ids = [pk for v in request.POST.getlist("run") if (pk := whole_number(v)) is not None]
    runs = list(Run.objects.filter(pk__in=ids).order_by("-created_at", "-id"))
    action = request.POST.get("action", "")
    back = reverse("runs:list") + ("?" + request.POST["back"] if request.POST.get("back") else "")
    if not runs:
        messages.error(request, "Select at least one run.")
        return redirect(back)
    if action == "compare":
        if len(runs) != 2:
            messages.error(request, f"Select exactly two runs to compare ({len(runs)} selected).")
            return redirect(back)
        # The older run is side a, so a delta reads as what changed since.
        a, b = sorted(runs, key=lambda r: (r.created_at, r.pk))
        return redirect(reverse("runs:compare") + "?" + urlencode({"a": a.pk, "b": b.pk}))
    if action == "export":
        response = StreamingHttpResponse(stored.response_body(stored.zip_chunks(runs[:EXPORT_MAX]), request),
                                         content_type="application/zip")
        response["Content-Disposition"] = 'attachment; filename="runs.zip"'
        return response
    if action == "delete":
        if not may_delete_runs(request.user):
            raise PermissionDenied("Deleting runs needs the runs.delete_run permission.")
        if request.POST.get("confirm") != "yes":
            return render(request, "across/delete_runs.html", {
                "runs": runs, "back": request.POST.get("back", ""),
                "records": sum(r.last_seq for r in runs)})
        runs = deletion.run_delete_later(*runs)
        messages.success(request, f"Deleted {len(runs)} run{'s' if len(runs) != 1 else ''}: "
                                  f"{', '.join(r.name for r in runs[:10])}{' …' if len(runs) > 10 else ''}; "
                                  f"their records go in the background.")
        return redirect(back)
    messages.error(request, f"Unknown action {action!r}.")
    return redirect(back)


def _comparison(request, window=None):
    """(the comparison, "", 200) or (None, why not, the status) from ?a=&b=[&agent_a=&agent_b=]; `window`:
    the pairs of agents shown (compare.compare_runs)."""
    refs = request.GET.get("a", ""), request.GET.get("b", "")
    for side, ref in zip("ab", refs):
        if not ref.strip():
            return None, f"Run {side} (?{side}=) is empty: name a run by its id or its name.", 400
    # A NUL names no run (and PostgreSQL text cannot hold one to look for).
    a, b = (None if "\x00" in ref else run_resolve(ref) for ref in refs)
    for side, ref, run in zip("ab", refs, (a, b)):
        if run is None:
            return None, f"Run {side} (?{side}=): no run has the id or name {ref!r}.", 404
    agent_a, agent_b = request.GET.get("agent_a", ""), request.GET.get("agent_b", "")
    if agent_a or agent_b:
        if not (agent_a and agent_b):
            side = "b" if agent_a else "a"
            return None, (f"Agent of {side} (?agent_{side}=) is empty: comparing two agents names one in each "
                          f"run (or leave both empty to compare the runs)."), 400
        try:
            return compare.compare_agents(a, agent_a, b, agent_b), "", 200
        except compare.NoSuchAgent as exc:
            return None, str(exc), 404
    return compare.compare_runs(a, b, window), "", 200


@require_GET
def compare_page(request):
    result, error, status = _comparison(request, (request.GET.get("pairs"), PAIRS_SHOWN))
    # The comparison's address without the pages shown (the JSON link and a saved view), and for each
    # pager the address without its own page (its links add theirs; the other lists stay where they are).
    query = urlencode([(k, v) for k, v in request.GET.items() if k not in PAGED_LISTS])
    keep = {p: urlencode([(k, v) for k, v in request.GET.items() if k != p]) + "&" for p in PAGED_LISTS}
    context = {"result": result, "error": error, "query": query, "keep": keep,
               "saved": saved.of_kind(SavedView.Kind.COMPARE),
               **{k: request.GET.get(k, "") for k in ("a", "b", "agent_a", "agent_b")}}
    if result:
        context["sections"] = compare_sections(result)
        if result["kind"] == "runs":
            context["unpaired"] = {side: paged(result[f"unpaired{side.upper()}"], request.GET.get(f"only_{side}"),
                                               UNPAIRED_SHOWN) for side in "ab"}
    # No runs named yet is the empty form with a hint, not an error page; its run fields offer the latest runs.
    if not request.GET.get("a") and not request.GET.get("b"):
        context["error"], status = "", 200
    context["recent"] = Run.objects.order_by("-pk").values_list("pk", "name")[:RUNS_OFFERED]
    return render(request, "across/compare.html", context, status=status)


def compare_sections(result: dict) -> list[dict]:
    """The comparison's figure tables, in reading order: the total (or the two agents), then the pairs
    shown, each titled with its place among all the pairs."""
    if result["kind"] == "agents":
        return [{"title": "The two agents", "a": result["agentA"], "b": result["agentB"], "rows": result["figures"]}]
    out = [{"title": "The whole run", "a": None, "b": None, "rows": result["total"]}]
    first = (result.get("pairPages") or {"first": 1})["first"]
    out += [{"title": f"Pair {n:,} · {p['a']['profileId'] or '(no profile)'} · {p['a']['role'] or 'standard'}",
             "a": p["a"], "b": p["b"], "rows": p["figures"]} for n, p in enumerate(result["pairs"], first)]
    return out


@login_not_required
@require_GET
def api_compare(request):
    """GET /api/runs/compare?a=&b=[&agent_a=&agent_b=]: the comparison as JSON (login or token)."""
    _run, refused = readable_run(request, request.GET.get("a", ""))
    if refused is not None and refused.status_code == 401:  # who may read; which runs is _comparison's
        return refused
    result, error, status = _comparison(request)
    if error:
        return JsonResponse({"error": error}, status=status)
    return JsonResponse(result, json_dumps_params={"ensure_ascii": False})


@require_GET
def analysis_page(request):
    f = filters.parse(request.GET)
    group = request.GET.get("group", "arm")
    try:
        result = analysis.analyse(f, group)
    except analysis.BadGroup as exc:
        return render(request, "across/analysis.html", {"error": str(exc), "filter": f, "choices": filters.choices(),
                                                          "group": group, "groups": analysis.SIMPLE}, status=400)
    fmt = request.GET.get("format", "")
    if fmt == "json":
        return JsonResponse(result, json_dumps_params={"ensure_ascii": False})
    if fmt == "csv":
        out = io.StringIO()
        csv.writer(out).writerows(analysis.csv_rows(result))
        response = HttpResponse(out.getvalue(), content_type="text/csv; charset=utf-8")
        response["Content-Disposition"] = 'attachment; filename="analysis.csv"'
        return response
    query = urlencode([*f.params(), ("group", result["group"])])
    # Each group's runs in the list, by the list's own filters (none where it has no filter for the group).
    listed = {group: {**picks, "query": urlencode(picks["query"])}
              for group, picks in analysis.group_lists(f, result).items()}
    return render(request, "across/analysis.html", {
        "listed": listed,
        "result": result, "filter": f, "choices": filters.choices(), "group": result["group"],
        "groups": analysis.SIMPLE, "query": query, "problems": f.problems,
        "charts": charts.analysis_charts(result), "saved": saved.of_kind(SavedView.Kind.ANALYSIS),
    })


@require_POST
def view_save(request):
    if not may_launch(request.user):  # who may launch may save views, as configurations
        raise PermissionDenied("Saving a view needs the runs.add_run permission (as launching does).")
    view, error = saved.save(name=request.POST.get("name", ""), kind=request.POST.get("kind", ""),
                             query=request.POST.get("query", ""), user=request.user)
    if error:
        messages.error(request, error)
        return redirect(saved.page_url(request.POST.get("kind", ""), request.POST.get("query", "")))
    messages.success(request, f"Saved the view {view.name!r}.")
    return redirect(saved.url(view))


@require_GET
def view_open(request, pk):
    return redirect(saved.url(get_object_or_404(SavedView, pk=pk)))


@require_POST
def view_delete(request, pk):
    if not may_launch(request.user):
        raise PermissionDenied("Deleting a view needs the runs.add_run permission (as saving one does).")
    view = get_object_or_404(SavedView.objects.select_related("created_by"), pk=pk)
    if not may_remove_saved(request.user, view):
        raise PermissionDenied(removal_refused(view))
    back = return_path(request, request.POST.get("next", ""), reverse(saved.PAGES[view.kind]))
    if request.POST.get("confirm") != "yes":
        return confirm_page(request, f"Delete the saved view {view.name!r}?", [
            f"Saved by {view.created_by or 'nobody recorded'} on {view.created_at:%Y-%m-%d %H:%M} UTC: the "
            f"{view.get_kind_display().lower()} page at {saved.url(view)}. That page stays as it is; only the name "
            "goes, and it cannot be brought back."],
            reverse("runs:view_delete", args=[pk]), "Delete it", back, "Keep it", hidden=[("next", back)])
    saved.delete(view)
    messages.success(request, f"Deleted the saved view {view.name!r}.")
    return redirect(back)
