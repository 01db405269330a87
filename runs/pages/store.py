"""One store's page (templates/runs/store.html), under the Stores tab: its holders with what it costs
each and whether they hold it live and its lifetime, each a page at a time, a memory store's peak
usage and its revision history in order —
each `memory_revision` the fold attributed to it (turn, agent, memory, revision, change, size, the
body's first characters), a page at a time. Tests: tests/pages/test_store.py.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Holding, MemoryRevision, ModuleStore
from runs.pages.common import paged, run_context
from runs.pages.origins import roster_records
from runs.pages.stores import store_index
from runs.stream.record import whole_number

# A memory written every turn of a long run has thousands of revisions: a page at a time, oldest first.
REVISIONS_SHOWN = 100
ROWS_SHOWN = 200  # holders (`?holders=N`) and lifetime steps (`?lifetime=N`) a page: a run's board has thousands
# What the lifetime reads of a successor and its predecessor (runs.pages.stores._transition_lifetime).
LIFETIME_FIELDS = ("agent_id", "predecessor_id", "transition_kind", "transition_modules", "first_seq")


@require_GET
def store_page(request, pk, module_id):
    run = run_or_404(pk)
    store = ModuleStore.objects.filter(run=run, module_id=module_id).first()
    if store is None:
        raise Http404("No such store in this run.")
    # A store held by thousands of agents reads only what the page shows of each, not its whole row.
    holdings = list(Holding.objects.filter(store=store).select_related("agent").only(
        "store", "kind", "origin", "writable", "scope", "position", "agent__agent_id", "agent__profile_id",
        "agent__status", "agent__last_breakdown").order_by("agent__first_seq", "position"))
    view = store_index(run, successions(run), holdings, store)[0]
    holders, holder_pages = paged(view.holders, request.GET.get("holders"), ROWS_SHOWN)
    live = {h.pk for h in view.live}
    for h in holders:
        h.cost, h.live = view.holder_costs.get(h.agent.agent_id), h.pk in live
    lifetime, lifetime_pages = paged(view.lifetime, request.GET.get("lifetime"), ROWS_SHOWN)
    revisions, total = memory_revisions(run, module_id), view.revisions
    pages = max(1, -(-total // REVISIONS_SHOWN))
    page = request.GET.get("page", "")
    page = min(whole_number(page) or 1, pages)  # anything else: the first page
    shown = list(revisions[(page - 1) * REVISIONS_SHOWN:page * REVISIONS_SHOWN])
    return render(request, "runs/store.html", run_context(
        run, "stores", store=store, view=view, holders=holders, holder_pages=holder_pages, lifetime=lifetime,
        lifetime_pages=lifetime_pages, origins=roster_records(run, [r["agent"] for r in lifetime]), revisions=shown,
        revision_total=total, page=page, pages=pages, first=(page - 1) * REVISIONS_SHOWN))


def successions(run) -> list:
    """The run's successors and their predecessors, each once (one query): all a store's lifetime
    reads of the run's agents, where reading all of them cost a run of 12,747 a quarter second."""
    successors = run.agents.exclude(transition_kind="").select_related("predecessor").only(
        "run", *LIFETIME_FIELDS, *(f"predecessor__{f}" for f in LIFETIME_FIELDS))
    return list({a.pk: a for s in successors for a in (s, s.predecessor) if a is not None}.values())


def memory_revisions(run, module_id=None):
    """A memory store's revision history, oldest first (every store's, without `module_id`)."""
    revisions = MemoryRevision.objects.filter(run=run).order_by("seq")
    return revisions if module_id is None else revisions.filter(module_id=module_id)


def first_revisions(run, limit: int) -> dict[str, list[MemoryRevision]]:
    """{store id: its first `limit` revisions, oldest first} for the run's memories stores, in one
    query that reads about `limit` index entries a store whatever the length of its history: each
    store's `limit`-th seq found off the (run, module_id, seq) index, then its revisions up to it.
    (Numbering every revision of the run in a window walked them all: 174 ms at 100,000.)"""
    revisions, stores = MemoryRevision._meta.db_table, ModuleStore._meta.db_table
    sql = f"""
    WITH cut AS (SELECT s.module_id, (SELECT c.seq FROM {revisions} c WHERE c.run_id = s.run_id
                                      AND c.module_id = s.module_id ORDER BY c.seq LIMIT 1 OFFSET %s) AS seq
                 FROM {stores} s WHERE s.run_id = %s AND s.kind = 'memories')
    SELECT r.* FROM cut CROSS JOIN {revisions} r  -- stores first: SQLite keeps a CROSS JOIN's order
    WHERE r.run_id = %s AND r.module_id = cut.module_id AND r.seq <= COALESCE(cut.seq, %s)
    ORDER BY cut.module_id, r.seq"""
    out = {}
    for r in MemoryRevision.objects.raw(sql, [limit - 1, run.pk, run.pk, 2 ** 63 - 1]):
        out.setdefault(r.module_id, []).append(r)
    return out
