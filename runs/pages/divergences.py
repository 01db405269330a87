"""The Divergences tab (templates/runs/divergences.html): declared vs observed module scopes
(spec/stream.md §7.4), and the count on the tab badge. Tests: tests/pages/test_divergences.py.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.stream.profiles import find_profile
from runs.stream.record import as_list
from runs.models import Agent, Holding, Run, RunFacts
from runs.pages.origins import roster_records
from runs.pages.common import RosterRow, agent_values, paged, run_agents, run_context, run_holdings
from surfaces.catalogue import CAPABILITIES

DEFAULT_MEMORIES_SCOPE = CAPABILITIES["memories"].params["scope"]
DIVERGENCES_SHOWN = 200  # a page of the list (`?divergences=N`): a run of thousands of agents may diverge in each
# What `run_divergences` reads of an agent.
DIVERGENCE_FIELDS = ("agent_id", "profile_id", "transition_kind", "transition_modules")


@require_GET
def divergences_page(request, pk):
    run = run_or_404(pk)
    # Only what the divergences read of an agent: a run of thousands spent most of this page decoding the rest.
    agents = agent_values(run, DIVERGENCE_FIELDS)
    memories, rosters = divergence_holdings(run, agents)
    divergences = run_divergences(run, agents, memories, rosters=rosters)
    shown, pages = paged(divergences, request.GET.get("divergences"), DIVERGENCES_SHOWN)
    return render(request, "runs/divergences.html", run_context(
        run, "divergences", divergences=shown, pages=pages, has_rosters=rosters,
        origins=roster_records(run, [d["agentId"] for d in shown]),
        kinds=Counter(d["kind"] for d in divergences).most_common()))


def profile_memories_scope(capability_set, profile_id) -> str | None:
    """The memories scope the profile `profile_id` declared (gg's default `isolated`); "" when the
    profile does not declare memories, or switches them off; None when the captured configuration
    does not describe it (each holder's own rule stands then)."""
    profile = find_profile(capability_set, profile_id)
    if profile is None:
        return None
    for cap in as_list(profile.get("capabilities")):
        if isinstance(cap, dict) and cap.get("id") == "memories":
            if cap.get("enabled") is False:
                return ""
            params = cap.get("params") if isinstance(cap.get("params"), dict) else {}
            return str(params.get("scope") or DEFAULT_MEMORIES_SCOPE)
    return ""  # the captured profile does not declare memories: nothing to diverge from


def divergence_count(run: Run, agents: list[Agent] | None = None, holdings: list[RosterRow] | None = None) -> int:
    """For the tab badge; remembered on the run object so a page asks once. The runs list's facts, folded
    with the run's last record (one row: reading every agent cost a run of 12,740 agents 2.4 s a page,
    and counting off rows a page read already still 20 ms on 8,278); else counted, from the agents and
    roster rows when the page read both."""
    if not hasattr(run, "_divergence_count"):
        folded = RunFacts.objects.filter(run=run, seq=run.last_seq).values_list("divergences", flat=True).first()
        if folded is None:
            agents = run_agents(run) if agents is None else agents
            rosters = None
            if holdings is None:
                holdings, rosters = divergence_holdings(run, agents)
            folded = len(run_divergences(run, agents, holdings, rosters=rosters))
        run._divergence_count = folded
    return run._divergence_count


def divergence_holdings(run: Run, agents: list[Agent]) -> tuple[list[RosterRow], bool]:
    """What `run_divergences` reads of the run's rosters, when nothing else needs them: the memories
    rows (a sixth of a roster: on a run of 11,500 agents, 11,500 rows read instead of 69,000) and
    whether the run reported any roster at all."""
    memories = run_holdings(run, agents, kind="memories")
    return memories, bool(memories) or Holding.objects.filter(agent__run=run).exists()


def run_divergences(run: Run, agents: list[Agent], holdings: list[RosterRow], *,
                    rosters: bool | None = None) -> list[dict]:
    """Each divergence as {kind, agentId, moduleKind, declared, observed, cause}. `holdings`: the
    run's roster rows, or its memories rows only with `rosters` saying whether it reported any.

    Only runs that reported rosters can diverge; a run without agent_modules shows none, whatever
    its transitions say.
    """
    out = []
    if not (bool(holdings) if rosters is None else rosters):
        run._divergence_count = 0
        return out
    memories = [h for h in holdings if h.kind == "memories" and h.enabled and h.module_id]
    # Each profile looked up once (a run of thousands of agents runs a few profiles).
    by_profile = {p: profile_memories_scope(run.capability_set, p) for p in {h.agent.profile_id for h in memories}}
    declared = {h.pk: h.scope if by_profile[h.agent.profile_id] is None else by_profile[h.agent.profile_id]
                for h in memories}

    # scope inherited (or read-only) resolved to a store of its own.
    for h in memories:
        if declared[h.pk] in ("inherited", "read-only") and h.origin == "created":
            out.append({"kind": "inherited_fell_back", "agentId": h.agent.agent_id, "moduleKind": "memories",
                        "declared": f"scope: {declared[h.pk]}", "observed": f"origin: created ({h.module_id})",
                        "cause": "Inheritance found no store to inherit (no spawner, or the spawner's memories are "
                                 "organized differently), so the agent fell back to a store of its own."})

    # declared shared, split over several stores: per profile.
    shared_stores = defaultdict(dict)  # profile -> {module_id: first holder}
    for h in memories:
        if declared[h.pk] == "shared":
            shared_stores[h.agent.profile_id].setdefault(h.module_id, h)
    for profile, stores in shared_stores.items():
        if len(stores) > 1:
            first, *rest = stores.values()
            for h in rest:
                out.append({"kind": "shared_split", "agentId": h.agent.agent_id, "moduleKind": "memories",
                            "declared": "scope: shared", "observed": f"{len(stores)} stores ({', '.join(stores)})",
                            "cause": f"Profile {profile or '(unnamed)'} declared one shared store, but "
                                     f"{h.agent.agent_id} bound {h.module_id} while {first.agent.agent_id} "
                                     f"held {first.module_id}."})

    # declared isolated, reaching several concurrent holders.
    by_store = defaultdict(list)
    for h in memories:
        if h.origin != "transferred":
            by_store[h.module_id].append(h)
    for module_id, holders in by_store.items():
        if len(holders) > 1 and any(declared[h.pk] == "isolated" for h in holders):
            names = ", ".join(h.agent.agent_id for h in holders)
            out.append({"kind": "isolated_reached_several", "agentId": holders[1].agent.agent_id,
                        "moduleKind": "memories", "declared": "scope: isolated",
                        "observed": f"{module_id} held by {len(holders)} concurrent holders ({names})",
                        "cause": f"An isolated store reached more than one instance at once: "
                                 f"{holders[1].agent.agent_id} came by it as {holders[1].origin or 'unreported'} "
                                 f"rather than holding a store of its own."})

    # a carried transition row with two different store ids: a store swapped under a successor.
    for succ in agents:
        for m in succ.transition_modules or ():
            if (isinstance(m, dict) and m.get("disposition") == "carried" and m.get("fromModuleId")
                    and m.get("toModuleId") and m["fromModuleId"] != m["toModuleId"]):
                out.append({"kind": "carried_swapped", "agentId": succ.agent_id, "moduleKind": str(m.get("kind") or ""),
                            "declared": f"carried {m['fromModuleId']}", "observed": f"holds {m['toModuleId']}",
                            "cause": f"The {succ.transition_kind or 'succession'} reported the store as carried, "
                                     f"yet the successor was handed a different store."})
    run._divergence_count = len(out)
    return out
