"""What each profile held (issue 20, "Per-profile view"), for the Agents tab: per module kind the
declared configuration (the profile's capability params: ownership, and the memories scope, with
gg's defaults) beside what its instances reported (stores, ownership, scope, origins), the
distribution badge read off the stores' sharing (console.md §1.6), and the divergences its
instances showed, as `declared → observed` notes. Computed from the roster rows and the store
index, never the log. Tests: tests/pages/test_profile_detail.py.
"""

from __future__ import annotations

from collections import defaultdict

from runs.models import Agent, ModuleStore, Run
from runs.pages.common import RosterRow
from runs.pages.stores import store_sharing
from runs.pages.profiles import group_keys
from runs.stream.profiles import profile_key, profiles
from runs.stream.record import as_list
from runs.stream.vocabulary import MODULE_KINDS
from surfaces.catalogue import CAPABILITIES

# The capability that backs each module kind (history is every agent's own, declared by none).
KIND_CAPABILITY = {"memories": "memories", "tasks": "tasks", "board": "project-management",
                   "skills": "skills", "archive": "agent-managed-context"}
STORES_NAMED = 20  # a kind's stores named by link, the rest on the Stores tab (20,000 links were 1.5 MB)
NOTES_SHOWN = 10  # a profile's divergence notes listed, the rest on the Divergences tab (5,000 were 1.9 MB)
# A store's sharing (runs.pages.stores) as the per-profile badge gg's console prints.
BADGES = {"instance": "per instance", "agent": "agent-scoped", "carried": "handed on", "run": "run-global",
          "mixed": "split"}


def declared_modules(profile: dict | None) -> dict[str, dict]:
    """{kind: {ownership, scope}} for each module-backed capability the profile switches on; the
    params' values, else gg's defaults (ownership `owned`, memories scope `isolated`)."""
    out = {}
    for cap in as_list((profile or {}).get("capabilities")):
        cap_id = cap if isinstance(cap, str) else (cap.get("id") if isinstance(cap, dict) else None)
        if isinstance(cap, dict) and cap.get("enabled") is False:
            continue
        kind = next((k for k, c in KIND_CAPABILITY.items() if c == cap_id), None)
        if kind is None:
            continue
        params = cap.get("params") if isinstance(cap, dict) and isinstance(cap.get("params"), dict) else {}
        defaults = CAPABILITIES[cap_id].params
        declared = {"ownership": str(params.get("ownership") or defaults.get("ownership") or "owned")}
        if kind == "memories":
            declared["scope"] = str(params.get("scope") or defaults["scope"])
        out[kind] = declared
    return out


def _badge(module_ids: list[str], sharing: dict[str, str], store_profiles: dict[str, set]) -> str:
    badges = {"run" if len(store_profiles[m]) > 1 else sharing[m] for m in module_ids}
    return (badges.pop() if len(badges) == 1 else "mixed") if badges else ""


def profile_modules(run: Run, agents: list[Agent], holdings: list[RosterRow],
                    divergences: list[dict]) -> dict[str, dict]:
    """{profile row key: {"kinds": [...], "divergences": [...], "count": n, "more": n}}.

    kinds: one entry per module kind declared or held, in kind order: {kind, declared (or None),
    stores, ownership, scope, origins, holders, badge, badge_label}. divergences: the first
    NOTES_SHOWN of the profile's notes — ownership notes (the holders disagree, or all hold on terms
    the profile did not declare), then the run's divergences whose agent runs under the profile —
    `count` of them in all and `more` not listed."""
    key_of = group_keys(run, agents)
    agent_key = {a.agent_id: key_of[a.pk] for a in agents}
    diverged = defaultdict(list)  # profile -> its agents' divergences
    for d in divergences:
        diverged[agent_key.get(d.get("agentId"))].append(d)
    # Each store of the run with its holders, as the Stores tab reads them, for its sharing.
    module_of = dict(ModuleStore.objects.filter(run=run).values_list("pk", "module_id"))
    holders = {m: [] for m in module_of.values()}
    for h in holdings:
        if h.store_id in module_of:
            holders[module_of[h.store_id]].append(h)
    sharing = {m: store_sharing(rows) for m, rows in holders.items()}
    store_profiles = {m: {key_of.get(h.agent_id) for h in rows} for m, rows in holders.items()}
    held = defaultdict(lambda: defaultdict(list))  # profile -> kind -> [RosterRow]
    for h in holdings:
        if h.enabled:
            held[key_of.get(h.agent_id, "")][h.kind].append(h)
    configured = {profile_key(p): p for p in profiles(run.capability_set)}
    rank = {k: i for i, k in enumerate(MODULE_KINDS)}
    out = {}
    for key in set(key_of.values()) | set(configured):
        declared = declared_modules(configured.get(key))
        kinds, notes = [], []
        for kind in sorted(set(declared) | set(held[key]), key=lambda k: (rank.get(k, len(rank)), k)):
            rows = held[key][kind]
            module_ids = list(dict.fromkeys(h.module_id for h in rows if h.module_id))
            badge = _badge([m for m in module_ids if m in sharing], sharing, store_profiles)
            ownership = sorted({h.ownership for h in rows if h.ownership})
            entry = {"kind": kind, "declared": declared.get(kind), "stores": module_ids, "ownership": ownership,
                     "named": module_ids[:STORES_NAMED], "more": max(len(module_ids) - STORES_NAMED, 0),
                     "scope": sorted({h.scope for h in rows if h.scope}),
                     "origins": sorted({h.origin for h in rows if h.origin}),
                     "holders": len({h.agent_id for h in rows}), "badge": badge, "badge_label": BADGES.get(badge, "")}
            kinds.append(entry)
            want = (declared.get(kind) or {}).get("ownership")
            if want and ownership and (len(ownership) > 1 or ownership[0] != want):
                notes.append({"kind": "ownership", "agentId": "", "moduleKind": kind,
                              "declared": f"ownership: {want}", "observed": "ownership: " + ", ".join(ownership),
                              "cause": "The holders disagree on ownership." if len(ownership) > 1 else
                                       "Every holder holds it on terms the profile did not ask for (carried in "
                                       "from another profile's configuration)."})
        # The profile's own ownership notes first: the Divergences tab, where the rest are, lists none.
        notes += diverged.get(key, [])
        out[key] = {"kinds": kinds, "divergences": notes[:NOTES_SHOWN], "count": len(notes),
                    "more": max(len(notes) - NOTES_SHOWN, 0)}
    return out
