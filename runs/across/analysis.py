"""Many runs, grouped: ``/analysis/?group=arm&language=python…`` (the list's filters pick the runs).

Read off the projections alone — one RunFacts row per run, carrying its agents summed per profile,
model, mode, language and docViewTypes (turns, calls per operation, refusals, failures, context
bands, cost: runs.ingest.facts.cohorts) and the duration — in one query whatever the number of
events or agents. Agent-level dimensions (the arm, execution mode, profile, model, a capability's presence
or a param's value in the agent's profile) group agents; run-level ones (the run name's prefix)
group each run's agents together. The list's agent-level filters keep only matching agents.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from dataclasses import dataclass, field, replace

from django.db.models import Count

from runs.ingest.facts import add_counts
from runs.across.filters import AGENT_SETS, RunFilter, run_q, runs as filtered_runs
from runs.models import Run
from runs.pages.arms import arm_group
from runs.stream.profiles import find_profile
from runs.stream.record import as_list

BANDS = ("docs_view", "search_results")
SIMPLE = {
    "arm": "programLanguage × docViewTypes",
    "language": "programLanguage",
    "docViewTypes": "docViewTypes",
    "mode": "executionMode",
    "profile": "profile",
    "model": "model",
    "prefix": "run name prefix",
}
PREFIX_CUT = re.compile(r"[-_ .#:/]+[^-_ .#:/]*$")  # the name's last separated part
# AGENT_SETS key -> the agent summary's key
SUMMARY_KEYS = {"mode": "mode", "language": "language", "docViewTypes": "docViewTypes", "model": "model",
                "profile": "profile"}


class BadGroup(ValueError):
    pass


@dataclass
class Group:
    key: str
    runs: set = field(default_factory=set)
    agents: int = 0
    turns: int = 0
    error_turns: int = 0
    error_turns_by_kind: Counter = field(default_factory=Counter)
    calls: Counter = field(default_factory=Counter)
    refusals: Counter = field(default_factory=Counter)
    failures: Counter = field(default_factory=Counter)
    bands: Counter = field(default_factory=Counter)
    cost: float = 0.0
    costed: int = 0  # agents that reported a cost
    run_cost: dict = field(default_factory=dict)  # run id -> this group's cost in that run

    def as_dict(self, durations: dict) -> dict:
        calls = sum(self.calls.values())
        spans = [durations[r] for r in sorted(self.runs) if durations.get(r) is not None]
        runs = len(self.runs)
        return {
            "group": self.key, "runs": runs, "agents": self.agents, "turns": self.turns,
            "errorTurns": self.error_turns, "errorTurnRate": _ratio(self.error_turns, self.turns),
            "errorTurnsByKind": dict(self.error_turns_by_kind.most_common()),
            "calls": calls, "callsPerTurn": _ratio(calls, self.turns),
            "callsByOperation": dict(self.calls.most_common()),
            "callsPerTurnByOperation": {op: _ratio(n, self.turns) for op, n in self.calls.most_common()},
            "refusals": sum(self.refusals.values()),
            "refusalsByOperation": dict(self.refusals.most_common()),
            "refusalRateByOperation": {op: _ratio(n, self.calls.get(op, 0)) for op, n in self.refusals.most_common()},
            "failuresByClass": dict(self.failures.most_common()),
            "bandTokens": {b: self.bands.get(b, 0) for b in BANDS},
            "tokensPerTurn": {b: _ratio(self.bands.get(b, 0), self.turns) for b in BANDS},
            "cost": self.cost if self.costed else None,
            "costPerRun": self.cost / runs if self.costed and runs else None,
            "costSpread": spread(list(self.run_cost.values())),
            "durationSeconds": sum(spans) / len(spans) if spans else None,
            "durationSpread": spread(spans),
        }


def spread(values: list) -> dict | None:
    """Five numbers over the runs of a group (min, quartiles, max) and how many runs: a box plot."""
    if not values:
        return None
    values = sorted(values)
    q1, median, q3 = statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else values * 3
    return {"n": len(values), "min": values[0], "q1": q1, "median": median, "q3": q3, "max": values[-1]}


def _ratio(n, d):
    return n / d if d else None


def _profile(capability_set, slug: str) -> dict:
    return find_profile(capability_set, slug) or {}


def _capability(profile: dict, cap_id: str):
    return next((c for c in as_list(profile.get("capabilities")) if isinstance(c, dict) and c.get("id") == cap_id), None)


def parse_group(text: str) -> tuple[str, str]:
    """`arm` | `capability:<id>` | `param:<capability>.<name>` -> (dimension, argument)."""
    text = (text or "arm").strip()
    if text in SIMPLE:
        return text, ""
    kind, _, arg = text.partition(":")
    if kind == "capability" and arg:
        return kind, arg
    if kind == "param" and "." in arg.strip("."):
        return kind, arg
    raise BadGroup(f"Cannot group by {text!r}: group by {', '.join(SIMPLE)}, capability:<id> or "
                   f"param:<capability>.<name>.")


def group_label(dimension: str, arg: str) -> str:
    if dimension == "capability":
        return f"capability {arg} (on / off / absent)"
    if dimension == "param":
        return f"param {arg}"
    return SIMPLE[dimension]


def _keyer(dimension: str, arg: str):
    """key(run, agent summary) -> the agent's group."""
    if dimension == "arm":
        return lambda run, a: arm_group(a["language"], a["docViewTypes"], a["mode"])
    if dimension in SUMMARY_KEYS:
        return lambda run, a: a[SUMMARY_KEYS[dimension]] or "—"
    if dimension == "prefix":
        return lambda run, a: PREFIX_CUT.sub("", run["name"]) or run["name"]
    if dimension == "capability":
        def by_capability(run, a):
            cap = _capability(_profile(run["capability_set"], a["profile"]), arg)
            return "absent" if cap is None else "on" if cap.get("enabled") else "off"
        return by_capability
    cap_id, _, name = arg.partition(".")

    def by_param(run, a):
        cap = _capability(_profile(run["capability_set"], a["profile"]), cap_id)
        params = cap.get("params") if isinstance(cap, dict) else None
        if not isinstance(params, dict) or name not in params:
            return "—"
        return json.dumps(params[name], sort_keys=True, ensure_ascii=False)
    return by_param


def _keeps(f: RunFilter):
    """The list's agent-level filters as a test of one agent summary."""
    wanted = [(SUMMARY_KEYS[k], set(v)) for k, v in f.sets.items() if v and k in AGENT_SETS]
    return lambda a: all(a.get(key) in values for key, values in wanted)


def analyse(f: RunFilter, group: str) -> dict:
    """``{group, label, runs, agents, groups: [Group.as_dict]}`` over the runs `f` picks."""
    dimension, arg = parse_group(group)
    fields = ["pk", "name", "facts__duration_seconds", "facts__agents"]
    if dimension in ("capability", "param"):
        fields.append("capability_set")
    key_of, keeps = _keyer(dimension, arg), _keeps(f)
    groups: dict[str, Group] = {}
    durations = {}
    for run in filtered_runs(f).values(*fields):
        pk = run["pk"]
        durations[pk] = run["facts__duration_seconds"]
        for a in run["facts__agents"] or ():
            if not keeps(a):
                continue
            key = key_of(run, a)
            g = groups.get(key) or groups.setdefault(key, Group(key))
            g.runs.add(pk)
            g.agents += a["agents"]
            g.turns += a["turns"]
            g.error_turns += a["errorTurns"]
            add_counts(g.error_turns_by_kind, a["errorTurnsByKind"])
            add_counts(g.calls, a["calls"])
            add_counts(g.refusals, a["refusals"])
            add_counts(g.failures, a["failures"])
            add_counts(g.bands, a["bands"])
            if a["cost"] is not None:
                g.cost += a["cost"]
                g.costed += a["agents"]
                g.run_cost[pk] = g.run_cost.get(pk, 0) + a["cost"]
    return {"group": group or "arm", "label": group_label(dimension, arg), "runs": len(durations),
            "agents": sum(g.agents for g in groups.values()),
            "groups": [groups[k].as_dict(durations) for k in sorted(groups)]}


CSV_COLUMNS = ("group", "runs", "agents", "turns", "errorTurns", "errorTurnRate", "calls", "callsPerTurn",
               "refusals", "cost", "costPerRun", "durationSeconds")


def list_filter(f: RunFilter, group: str, key: str) -> RunFilter | None:
    """The runs list's own filters (runs.across.filters) picking a group's runs: `f`'s, with the group's
    value in place of its dimension's (an arm is its language and docViewTypes, or its mode; a prefix the
    list's search); None where the list has no filter for it (a capability, a param, a value unreported)."""
    dimension, _arg = parse_group(group)
    sets, q = {k: list(v) for k, v in f.sets.items()}, f.q
    if dimension in SUMMARY_KEYS and key != "—":
        sets[dimension] = [key]
    elif dimension == "arm":
        language, dot, doc_view_types = key.partition(" · ")
        mode = key.removeprefix("no arm: ").replace("tool calling", "tool_calling")
        if dot:
            sets["language"] = [language]
            if doc_view_types != "docViewTypes unreported":
                sets["docViewTypes"] = [doc_view_types]
        elif key.startswith("no arm: ") and mode != "no surface reported":
            sets["mode"] = [mode]
        else:
            return None
    elif dimension == "prefix" and not f.q:
        q = key
    else:
        return None
    return replace(f, q=q, sets=sets, problems=[])


def group_lists(f: RunFilter, result: dict) -> dict[str, dict]:
    """{group: {query, runs}}: the runs list's query picking the group's runs (`list_filter`) and how many
    runs it picks, more than the group's when its filters cannot tell agents apart (a run with a python
    agent and another agent shown only `return` is in the list's python + return): one query for all."""
    picks = {g["group"]: p for g in result["groups"] if (p := list_filter(f, result["group"], g["group"])) is not None}
    keys = {group: f"g{i}" for i, group in enumerate(picks)}
    counts = Run.objects.aggregate(**{keys[g]: Count("pk", filter=run_q(p)) for g, p in picks.items()}) if picks else {}
    return {group: {"query": p.params(), "runs": counts[keys[group]]} for group, p in picks.items()}


def csv_rows(result: dict):
    """The result as CSV rows: the scalar figures, then one column per operation, failure class and
    band (``calls:<operation>``, ``refusalRate:<operation>``, ``failures:<class>``, ``tokensPerTurn:<band>``)."""
    keyed = (("calls", "callsByOperation"), ("refusals", "refusalsByOperation"),
             ("refusalRate", "refusalRateByOperation"), ("failures", "failuresByClass"),
             ("tokensPerTurn", "tokensPerTurn"))
    extra = []
    for prefix, name in keyed:
        seen = []
        for g in result["groups"]:
            seen += [k for k in g[name] if k not in seen]
        extra += [(prefix, name, k) for k in seen]
    yield [*CSV_COLUMNS, *(f"{p}:{k}" for p, _, k in extra)]
    for g in result["groups"]:
        yield [*(g[c] for c in CSV_COLUMNS), *(g[name].get(k, 0) for _, name, k in extra)]
