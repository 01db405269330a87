"""The run read per configured profile (issue 20, "Per-profile view"), on the Agents tab: one row
per profile of the captured capability set — a profile that never ran is a row too ("never ran")
— then any profile the agents report that the configuration does not describe. Each row sums its
instances off the Agent rows (no log read): turns, tokens and cost with their share of the run,
peak context (worst, and the average when several instances reported one), calls per response
(pooled: calls over turns), capability chips, withheld tools, and the offered surface as a union
across instances ("offered to 3 of 12"; a `0×` entry is kept).
"""

from __future__ import annotations

import math

from collections import Counter

from runs.models import Agent, Run
from runs.pages.common import calls_once, tool_keyed
from runs.pages.costs import agent_spend
from runs.pages.machines import declared_states
from runs.stream.prices import model_prices
from runs.stream.profiles import find_profile, profile_key, profile_keys, profile_name, profiles
from runs.stream.record import as_list
from runs.stream.usage import num, total_tokens


def _capabilities(profile: dict | None) -> list[str]:
    chips = []
    for cap in as_list((profile or {}).get("capabilities")):
        if isinstance(cap, str):
            chips.append(cap)
        elif isinstance(cap, dict) and cap.get("id") and cap.get("enabled") is not False:
            chips.append(str(cap["id"]))
    return chips


def _offered(agent: Agent) -> list[str]:
    """What the agent was offered, by name: its tools, and each API function's operation — its tools
    only when its calls are read on them (common.tool_keyed)."""
    names = [str(t) for t in agent.tools]
    for api in agent.apis if not tool_keyed(agent) else ():
        if isinstance(api, dict):
            names += [str(fn.get("operation") or fn.get("name") or "") for fn in as_list(api.get("functions"))
                      if isinstance(fn, dict)]
    return [n for n in dict.fromkeys(names) if n]


def _share(part, whole):
    share = 100 * (part / whole) if part and whole else None  # anyone's stream: 1e308 tokens overflow
    return round(share) if share is not None and math.isfinite(share) else None


def group_keys(run: Run, agents: list[Agent]) -> dict[int, str]:
    """{agent pk: the per-profile row it counts under}: its configured profile's key, else its own
    profile id; each profile id looked up once (12,747 lookups were a fifth of the Agents tab)."""
    keys = {profile_id: group_key(run, profile_id) for profile_id in {a.profile_id for a in agents}}
    return {a.pk: keys[a.profile_id] for a in agents}


def group_key(run: Run, profile_id: str) -> str:
    """The per-profile row an agent of `profile_id` counts under (the Agents tab's ?profile= names it)."""
    found = find_profile(run.capability_set, profile_id)
    return profile_key(found) if found else profile_id


# What `profile_rows` reads of each agent (the Agents tab reads them with common.agent_values).
PROFILE_FIELDS = ("profile_id", "model_id", "usage", "last_breakdown", "turns", "surface_reported", "execution_mode",
                  "tools", "apis", "withheld", "api_calls", "tool_calls", "api_failures", "tool_failures", "api_tools")


def profile_rows(run: Run, agents: list[Agent], key_of: dict | None = None) -> list[dict]:
    """Per profile group, its figures (`key_of`: each agent's group, `group_keys`, when the caller has it)."""
    configured = profiles(run.capability_set)
    groups: dict[str, list[Agent]] = {profile_key(p): [] for p in configured}
    key_of = group_keys(run, agents) if key_of is None else key_of
    for a in agents:
        groups.setdefault(key_of[a.pk], []).append(a)
    run_tokens = total_tokens((run.usage or {}).get("tokens")) or 0
    table = model_prices()
    spends = {a.pk: agent_spend(a, table) for a in agents}
    run_cost = sum(s["cost"] for s in spends.values() if s["cost"] is not None)
    rows = []
    for key, members in groups.items():
        profile = next((p for p in configured if key in profile_keys(p)), None)
        tokens = sum(total_tokens((a.usage or {}).get("tokens")) or 0 for a in members)
        costs = [spends[a.pk] for a in members if spends[a.pk]["cost"] is not None]
        cost = sum(c["cost"] for c in costs) if costs else None
        peaked = [(p, a.agent_id) for a in members
                  if (p := num((a.last_breakdown or {}).get("totalTokens"))) is not None]
        peaks = [p for p, _ in peaked]
        turns = sum(a.turns for a in members)
        calls = sum(a.call_count for a in members)
        # Named once per distinct surface, counted per instance: agents reporting the same surface share
        # its decoded lists (common.agent_values), so 8,000 instances of a profile are a few surfaces.
        surfaces = {}  # (its tools, its apis, tool-keyed) -> [an instance, how many]
        for a in members:
            if a.surface_reported:
                surfaces.setdefault((id(a.tools), id(a.apis), tool_keyed(a)), [a, 0])[1] += 1
        offered = Counter()
        for a, n in surfaces.values():
            for name in _offered(a):
                offered[name] += n
        called = Counter()
        for a in members:
            called.update(calls_once(a))
        surfaced = sum(1 for a in members if a.surface_reported)
        rows.append({
            "key": key or "(none)", "group": key,
            "name": profile_name(profile) if profile else (key or "(none)"),
            "configured": profile is not None,
            "machine": bool(declared_states(profile)),  # a shell: its states run as their own profiles' instances
            "model": str((profile or {}).get("modelId") or "") or ", ".join(sorted({a.model_id for a in members if a.model_id})),
            "instances": len(members),
            "turns": turns,
            "tokens": tokens, "token_share": _share(tokens, run_tokens),
            "cost": cost, "cost_estimated": any(c["estimated"] for c in costs),
            "cost_share": _share(cost, run_cost),
            "peak_context": max(peaks) if peaks else None,
            "peak_agent": max(peaked, key=lambda pa: pa[0])[1] if peaked else "",  # whose context it is
            "mean_context": _mean(peaks) if len(peaks) > 1 else None,
            "calls_per_response": round(calls / turns, 2) if turns else None,
            "capabilities": _capabilities(profile),
            "withheld": sorted({str(t) for a in members for t in a.withheld}),
            "offered": [{"name": n, "instances": k, "of": surfaced, "calls": called.get(n, 0)}
                        for n, k in sorted(offered.items())],
        })
    return rows


def _mean(values):
    """Their mean as a whole number; None past a float's range (a stream can report 1e308 tokens)."""
    try:
        return round(sum(values) / len(values))
    except (OverflowError, ValueError):
        return None
