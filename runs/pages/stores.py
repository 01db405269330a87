"""The Stores tab (templates/runs/stores.html): one entry per module store with its holders, its
lifetime across successions, its sharing and what it costs each holder. Tests:
tests/pages/test_stores.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.stream.vocabulary import MODULE_KINDS
from runs.models import Agent, Holding, ModuleStore, Run
from runs.pages.origins import roster_records
from runs.pages.common import get_run, run_agents, run_context, run_holdings

# The band a holder's store occupies in its context (spec/stream.md §7.4); history is the whole window.
STORE_BANDS = {"memories": "memory", "tasks": "task_list", "skills": "skill"}


# A kind's stores are shown a page at a time: a run spawning thousands of agents with stores of their
# own keeps a page of bounded size.
STORES_SHOWN = 50


@require_GET
def stores_page(request, pk):
    run = get_run(pk)
    stores = store_index(run, run_agents(run), run_holdings(run))
    page = request.GET.get("page", "")
    page = int(page) if page.isdigit() and int(page) > 0 else 1  # anything else: the first page
    groups = store_pages(stores_by_kind(stores), request.GET.get("kind", ""), page)
    return render(request, "runs/stores.html", run_context(run, "stores", groups=groups,
                                                           origins=roster_records(run)))


@dataclass
class StoreView:
    store: ModuleStore
    holders: list = field(default_factory=list)  # [Holding] with .agent
    lifetime: list = field(default_factory=list)  # [{event, agent, from_agent, transition, other}]
    sharing: str = ""  # instance | carried | agent | run
    holder_costs: dict = field(default_factory=dict)  # {agent_id: tokens in its latest context, or None}
    released_by: list = field(default_factory=list)  # holders whose succession dropped the store
    dropped: bool = False  # every holder has released it

    @property
    def module_id(self):
        return self.store.module_id

    @property
    def kind(self):
        return self.store.kind


def _sharing(holders) -> str:
    """The store's scope kind, read off its concurrent holders (origin other than `transferred`)."""
    concurrent = [h for h in holders if h.origin != "transferred"]
    if len(concurrent) <= 1:
        return "carried" if len(holders) > 1 else "instance"
    return "agent" if len({h.agent.profile_id for h in concurrent}) == 1 else "run"


def holder_cost(holding: Holding):
    """What the store costs its holder: the kind's band in the holder's latest context_breakdown
    (history: the whole window); None where no band carries the kind or nothing was reported."""
    latest = holding.agent.last_breakdown
    if not latest:
        return None
    if holding.kind == "history":
        return latest.get("totalTokens")
    band = STORE_BANDS.get(holding.kind)
    return latest["bands"].get(band, 0) if band else None


def _transition_lifetime(agents: list[Agent]) -> dict[str, list[dict]]:
    """Lifetime rows per store id from each successor's `agent_transition.modules` (oldest first)."""
    by_pk = {a.pk: a for a in agents}
    rows = defaultdict(list)
    for succ in sorted(agents, key=lambda a: a.first_seq):
        pred = by_pk.get(succ.predecessor_id)
        for m in succ.transition_modules or ():
            if not isinstance(m, dict):
                continue
            disposition = str(m.get("disposition") or "")
            src, dst = str(m.get("fromModuleId") or ""), str(m.get("toModuleId") or "")
            base = {"agent": succ.agent_id, "from_agent": pred.agent_id if pred else "",
                    "transition": succ.transition_kind, "kind": str(m.get("kind") or "")}
            if disposition in ("carried", "linked") and src and dst and src != dst:
                # the predecessor's store is released: the successor holds the other one
                rows[src].append({**base, "event": "swapped", "other": dst, "releases": True})
                rows[dst].append({**base, "event": "swapped", "other": src})
            elif disposition in ("carried", "linked"):
                if src or dst:
                    rows[src or dst].append({**base, "event": disposition, "other": ""})
            elif disposition == "copied":
                if src:
                    rows[src].append({**base, "event": "copied", "other": dst})
                if dst:  # the copy's lifetime starts here, not at a creation
                    rows[dst].append({**base, "event": "copied", "other": src, "starts": True})
            elif disposition == "dropped" and src:
                rows[src].append({**base, "event": "dropped", "other": "", "releases": True})
            elif disposition == "initialized":
                if src and src != dst:
                    rows[src].append({**base, "event": "dropped", "other": dst, "releases": True})
                if dst:
                    rows[dst].append({**base, "event": "created", "other": ""})
    return rows


def store_index(run: Run, agents: list[Agent], holdings: list[Holding]) -> list[StoreView]:
    """One entry per store, whatever the number of holders, in kind order then id: holders,
    lifetime (where the stream starts it — created at its first holder, or copied by a fork — then
    every succession touching it) and sharing."""
    views = {s.pk: StoreView(s) for s in ModuleStore.objects.filter(run=run)}
    for h in holdings:
        if h.store_id in views:
            views[h.store_id].holders.append(h)
    transitions = _transition_lifetime(agents)
    for view in views.values():
        first = view.holders[0] if view.holders else None
        rows = [r for r in transitions.get(view.module_id, ()) if r["event"] != "created"]
        created = [] if any(r.get("starts") for r in rows) else [
            {"event": "created", "agent": first.agent.agent_id if first else "", "from_agent": "",
             "transition": "", "kind": view.kind, "other": "", "origin": first.origin if first else ""}]
        view.lifetime = created + rows
        view.sharing = _sharing(view.holders)
        view.holder_costs = {h.agent.agent_id: holder_cost(h) for h in view.holders}
        # A store is dropped only when every holder has released it (spec/stream.md §7.4).
        releases = {r["from_agent"] for r in view.lifetime if r.get("releases")}
        holders = list(dict.fromkeys(h.agent.agent_id for h in view.holders))
        view.released_by = [a for a in holders if a in releases]
        view.dropped = bool(holders) and len(view.released_by) == len(holders)
    kind_rank = {k: i for i, k in enumerate(MODULE_KINDS)}
    return sorted(views.values(), key=lambda v: (kind_rank.get(v.kind, len(kind_rank)), v.kind, _id_key(v.module_id)))


def _id_key(module_id: str):
    """`memories-10` after `memories-9`."""
    head, _, tail = module_id.rpartition("-")
    return (head, int(tail)) if tail.isdigit() else (module_id, -1)


def stores_by_kind(stores: list[StoreView]) -> list[tuple[str, list[StoreView]]]:
    groups = defaultdict(list)
    for s in stores:
        groups[s.kind].append(s)
    return list(groups.items())


@dataclass
class StoreGroup:
    kind: str
    stores: list  # the page shown
    total: int
    page: int
    pages: int


def store_pages(groups, kind: str, page: int) -> list[StoreGroup]:
    """Each kind's first page of `STORES_SHOWN` stores; with `kind`, only that kind at `page` (past
    its last page: the last one)."""
    out = []
    for name, stores in groups:
        if kind and name != kind:
            continue
        pages = max(1, -(-len(stores) // STORES_SHOWN))
        at = min(page, pages) if kind else 1
        out.append(StoreGroup(name, stores[(at - 1) * STORES_SHOWN:at * STORES_SHOWN], len(stores), at, pages))
    return out
