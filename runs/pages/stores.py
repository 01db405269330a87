"""The Stores tab (templates/runs/stores.html): one entry per module store with its holders, its
lifetime across successions, its sharing and what it costs each holder. Tests:
tests/pages/test_stores.py.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from django.shortcuts import render
from django.views.decorators.http import require_GET

from django.db.models import Count

from runs.access import run_or_404
from runs.stream.record import whole_number
from runs.stream.vocabulary import MODULE_KINDS, OPEN_AGENT_STATUSES
from runs.models import Agent, MemoryRevision, ModuleStore, Run
from runs.pages.common import RosterRow, agent_values, run_context, run_holdings
from runs.pages.divergences import DIVERGENCE_FIELDS
from runs.pages.origins import roster_records

# The band a holder's store occupies in its context (spec/stream.md §7.4); history is the whole window.
STORE_BANDS = {"memories": "memory", "tasks": "task_list", "skills": "skill"}


# A kind's stores are shown a page at a time: a run spawning thousands of agents with stores of their
# own keeps a page of bounded size.
STORES_SHOWN = 50
# A store's holders and lifetime steps its card lists (a run's board may have thousands of holders, a
# carried memory a step per succession); its own page lists them all, a page at a time.
CARD_ROWS = 20
FIND_CHARS = ModuleStore._meta.get_field("module_id").max_length  # what the search for a store reads of its text
# What the index reads of a holder (and the tab badge's divergences, from the same rows): decoding whole
# agent rows was 2.4 of the page's 2.7 s under the profiler on 12,747 agents.
STORE_FIELDS = (*DIVERGENCE_FIELDS, "status", "last_breakdown", "first_seq", "predecessor_id")


@require_GET
def stores_page(request, pk):
    run = run_or_404(pk)
    agents = agent_values(run, STORE_FIELDS)
    holdings = run_holdings(run, agents, enabled_only=True)
    stores = store_index(run, agents, holdings)
    page = request.GET.get("page", "")
    page = whole_number(page) or 1  # anything else: the first page
    show = request.GET.get("show", "")
    find = request.GET.get("find", "").strip()[:FIND_CHARS]
    groups = store_pages(stores_by_kind(stores), request.GET.get("kind", ""), page, show if show in SHOWN else "",
                         find)
    return render(request, "runs/stores.html", run_context(
        run, "stores", agents, holdings, groups=groups, show=show, find=find, find_chars=FIND_CHARS,
        origins=roster_records(run, [r["agent"] for g in groups for s in g.stores for r in s.card_lifetime]),
        matched=sum(g.shown for g in groups) if find else None))


@dataclass
class StoreView:
    store: ModuleStore
    holders: list = field(default_factory=list)  # [RosterRow]
    lifetime: list = field(default_factory=list)  # [{event, agent, from_agent, transition, other}]
    sharing: str = ""  # instance | carried | agent | run
    holder_costs: dict = field(default_factory=dict)  # {agent_id: tokens in its latest context, or None}
    released_by: list = field(default_factory=list)  # holders whose succession dropped the store
    dropped: bool = False  # every holder has released it
    live: list = field(default_factory=list)  # holders still running or blocked that hold it yet
    revisions: int = 0  # memory_revision records attributed to it

    @property
    def module_id(self):
        return self.store.module_id

    @property
    def card_holders(self):
        return self.holders[:CARD_ROWS]

    @property
    def more_holders(self) -> int:
        return max(len(self.holders) - CARD_ROWS, 0)

    @property
    def card_lifetime(self):
        return self.lifetime[:CARD_ROWS]

    @property
    def more_lifetime(self) -> int:
        return max(len(self.lifetime) - CARD_ROWS, 0)

    @property
    def kind(self):
        return self.store.kind


def store_sharing(holders) -> str:
    """The store's scope kind, read off its concurrent holders (origin other than `transferred`)."""
    concurrent = [h for h in holders if h.origin != "transferred"]
    if len(concurrent) <= 1:
        return "carried" if len(holders) > 1 else "instance"
    return "agent" if len({h.agent.profile_id for h in concurrent}) == 1 else "run"


def holder_cost(holding: RosterRow):
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


def store_index(run: Run, agents: list[Agent], holdings: list[RosterRow],
                store: ModuleStore | None = None) -> list[StoreView]:
    """One entry per store (or only `store`, read already, `holdings` its own), whatever the number
    of holders, in kind order then id: holders, lifetime (where the stream starts it — created at its
    first holder, or copied by a fork — then every succession touching it) and sharing."""
    stores, revisions = ModuleStore.objects.filter(run=run), MemoryRevision.objects.filter(run=run)
    if store is not None:
        stores, revisions = [store], revisions.filter(module_id=store.module_id)
    views = {s.pk: StoreView(s) for s in stores}
    revisions = dict(revisions.values_list("module_id").annotate(n=Count("id")))
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
        view.sharing = store_sharing(view.holders)
        view.holder_costs = {h.agent.agent_id: holder_cost(h) for h in view.holders}
        # A store is dropped only when every holder has released it (spec/stream.md §7.4).
        releases = {r["from_agent"] for r in view.lifetime if r.get("releases")}
        holders = list(dict.fromkeys(h.agent.agent_id for h in view.holders))
        view.released_by = [a for a in holders if a in releases]
        view.dropped = bool(holders) and len(view.released_by) == len(holders)
        view.live = [h for h in view.holders if h.agent.status in OPEN_AGENT_STATUSES and h.agent.agent_id not in releases]
        view.revisions = revisions.get(view.module_id, 0)
    return sorted(views.values(), key=lambda v: (*kind_key(v.kind), _id_key(v.module_id)))


_KIND_RANK = {k: i for i, k in enumerate(MODULE_KINDS)}


def kind_key(kind: str) -> tuple:
    """Where a kind's stores sit: gg's kind order, then any other kind by name."""
    return _KIND_RANK.get(kind, len(_KIND_RANK)), kind


def store_kinds(run: Run) -> dict[str, int]:
    """{kind: the run's stores of it} in `kind_key` order: the report's stores counted, none read."""
    counts = ModuleStore.objects.filter(run=run).values_list("kind").annotate(n=Count("id")).order_by()
    return dict(sorted(counts, key=lambda kn: kind_key(kn[0])))


def _id_key(module_id: str):
    """`memories-10` after `memories-9`."""
    head, _, tail = module_id.rpartition("-")
    n = whole_number(tail)
    return (head, n) if n is not None else (module_id, -1)


def stores_by_kind(stores: list[StoreView]) -> list[tuple[str, list[StoreView]]]:
    groups = defaultdict(list)
    for s in stores:
        groups[s.kind].append(s)
    return list(groups.items())


# What a store holds when something was written to it (its latest snapshot naming it); history is
# the holders' own window and skills a catalogue gg fills, so neither is "written" or "never written".
_WRITTEN = {
    "memories": lambda v, snap: v.revisions > 0 or bool(snap.get("memories")),
    "tasks": lambda v, snap: bool(snap.get("tasks")),
    "board": lambda v, snap: bool(snap.get("issues") or snap.get("epics")),
    "archive": lambda v, snap: bool(snap.get("entries")),
}


def never_written(view: StoreView):
    """True when nothing was ever written to the store, None for a kind nothing writes."""
    written = _WRITTEN.get(view.kind)
    snap = view.store.snapshot if isinstance(view.store.snapshot, dict) else {}
    return None if written is None else not written(view, snap)


def live_cost(view: StoreView):
    """What the store costs per turn over its live holders' windows (their latest band summed); None
    where no live holder reported one."""
    costs = [view.holder_costs.get(h.agent.agent_id) for h in view.live]
    costs = [c for c in costs if c is not None]
    return sum(costs) if costs else None


# The stores each overview figure counts (?show=), the list it links to.
SHOWN = {
    "held": lambda v: bool(v.holders),
    "live": lambda v: bool(v.live),
    "shared": lambda v: len({h.agent.agent_id for h in v.live}) > 1,
    "costed": lambda v: live_cost(v) is not None,
    "unwritten": lambda v: never_written(v) is True,
}


def kind_overview(stores: list[StoreView]) -> dict:
    """gg's per-kind overview (console.md "Modules"): stores, holders, live holders, stores genuinely
    shared (held by more than one live agent), the per-turn cost summed over the live windows, and the
    stores never written (None for a kind nothing writes)."""
    costs = [c for c in (live_cost(v) for v in stores) if c is not None]
    unwritten = [never_written(v) for v in stores]
    return {"stores": len(stores), "holders": sum(len(v.holders) for v in stores),
            "live": sum(len(v.live) for v in stores), "shared": sum(SHOWN["shared"](v) for v in stores),
            "cost": sum(costs) if costs else None,
            "unwritten": None if all(u is None for u in unwritten) else sum(u is True for u in unwritten)}


@dataclass
class StoreGroup:
    kind: str
    stores: list  # the page shown
    total: int
    page: int
    pages: int
    overview: dict = field(default_factory=dict)  # kind_overview of every store of the kind
    shown: int = 0  # stores the ?show= filter kept (of total)


def store_pages(groups, kind: str, page: int, show: str = "", find: str = "") -> list[StoreGroup]:
    """Each kind's first page of `STORES_SHOWN` stores; with `kind`, only that kind at `page` (past
    its last page: the last one), with `show` only the stores that overview figure counts, and with
    `find` only those whose id contains it, in any case (a kind none matches is left out). The
    overview figures count every store of the kind."""
    out, needle = [], find.casefold()
    for name, stores in groups:
        if kind and name != kind:
            continue
        listed = [v for v in stores if SHOWN[show](v)] if kind and show else stores
        if needle:
            listed = [v for v in listed if needle in v.module_id.casefold()]
            if not listed:
                continue
        overview = kind_overview(stores)
        pages = max(1, -(-len(listed) // STORES_SHOWN))
        at = min(page, pages) if kind else 1
        out.append(StoreGroup(name, listed[(at - 1) * STORES_SHOWN:at * STORES_SHOWN], len(stores), at, pages,
                              overview, len(listed)))
    return out
