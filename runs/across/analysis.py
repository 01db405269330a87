"""Many runs, grouped: ``/analysis/?group=arm&language=python…`` (the list's filters pick the runs).

Read off the projections alone — Agent rows (turns, calls per operation, failures, context bands,
usage) and RunFacts (refusals per agent, duration, cost) — in two queries whatever the number of
events. Agent-level dimensions (the arm, execution mode, profile, model, a capability's presence
or a param's value in the agent's profile) group agents; run-level ones (the run name's prefix)
group each run's agents together. The list's agent-level filters keep only matching agents.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field

from runs.across.filters import RunFilter, agent_q, runs as filtered_runs
from runs.ingest.projections import as_list
from runs.models import Agent

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
AGENT_FIELDS = ("run_id", "agent_id", "profile_id", "model_id", "execution_mode", "program_language",
                "doc_view_types", "turns", "error_turn_count", "error_turns", "api_calls", "tool_calls",
                "api_failures", "tool_failures", "context_bands", "usage")


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
            "runCosts": [self.run_cost[r] for r in sorted(self.run_cost)],
            "durationSeconds": sum(spans) / len(spans) if spans else None,
            "runDurations": spans,
        }


def _ratio(n, d):
    return n / d if d else None


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else 0


def _profile(capability_set, slug: str) -> dict:
    agents = capability_set.get("agents") if isinstance(capability_set, dict) else None
    return next((p for p in as_list(agents) if isinstance(p, dict) and p.get("slug") == slug), {})


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


def _keyer(dimension: str, arg: str, run_info: dict):
    if dimension == "arm":
        return lambda a: f"{a['program_language'] or '—'} · {a['doc_view_types'] or '—'}"
    if dimension in ("language", "docViewTypes", "mode", "profile", "model"):
        column = {"language": "program_language", "docViewTypes": "doc_view_types", "mode": "execution_mode",
                  "profile": "profile_id", "model": "model_id"}[dimension]
        return lambda a: a[column] or "—"
    if dimension == "prefix":
        return lambda a: PREFIX_CUT.sub("", run_info[a["run_id"]]["name"]) or run_info[a["run_id"]]["name"]
    if dimension == "capability":
        def by_capability(a):
            cap = _capability(_profile(run_info[a["run_id"]]["capability_set"], a["profile_id"]), arg)
            return "absent" if cap is None else "on" if cap.get("enabled") else "off"
        return by_capability
    cap_id, _, name = arg.partition(".")

    def by_param(a):
        cap = _capability(_profile(run_info[a["run_id"]]["capability_set"], a["profile_id"]), cap_id)
        params = cap.get("params") if isinstance(cap, dict) else None
        if not isinstance(params, dict) or name not in params:
            return "—"
        return json.dumps(params[name], sort_keys=True, ensure_ascii=False)
    return by_param


def analyse(f: RunFilter, group: str) -> dict:
    """``{group, label, runs, agents, groups: [Group.as_dict]}`` over the runs `f` picks."""
    dimension, arg = parse_group(group)
    runs = filtered_runs(f)
    fields = ["pk", "name", "facts__duration_seconds", "facts__refusals_by_agent"]
    if dimension in ("capability", "param"):
        fields.append("capability_set")
    run_info = {}
    for row in runs.values(*fields):
        run_info[row["pk"]] = {"name": row["name"], "duration": row["facts__duration_seconds"],
                               "refusals": row["facts__refusals_by_agent"] or {},
                               "capability_set": row.get("capability_set")}
    agents = Agent.objects.filter(agent_q(f), run_id__in=runs.values("pk")).order_by("run_id", "first_seq", "id")
    key_of = _keyer(dimension, arg, run_info)
    groups: dict[str, Group] = {}
    for a in agents.values(*AGENT_FIELDS):
        if a["run_id"] not in run_info:  # a run that arrived between the two reads
            continue
        g = groups.setdefault(key_of(a), Group(key_of(a)))
        g.runs.add(a["run_id"])
        g.agents += 1
        g.turns += a["turns"]
        g.error_turns += a["error_turn_count"]
        g.error_turns_by_kind.update({k: _num(v) for k, v in (a["error_turns"] or {}).items()})
        g.calls.update({k: _num(v) for k, v in (a["api_calls"] or {}).items()})
        g.calls.update({k: _num(v) for k, v in (a["tool_calls"] or {}).items()})
        g.refusals.update(run_info[a["run_id"]]["refusals"].get(a["agent_id"], {}))
        g.failures.update({f"api {k}": _num(v) for k, v in (a["api_failures"] or {}).items()})
        g.failures.update({f"tool {k}": _num(v) for k, v in (a["tool_failures"] or {}).items()})
        g.bands.update({b: _num((a["context_bands"] or {}).get(b)) for b in BANDS})
        cost = ((a["usage"] or {}).get("cost") or {}).get("comparable")
        if isinstance(cost, (int, float)) and not isinstance(cost, bool):
            g.cost += cost
            g.costed += 1
            g.run_cost[a["run_id"]] = g.run_cost.get(a["run_id"], 0) + cost
    durations = {pk: info["duration"] for pk, info in run_info.items()}
    return {"group": group or "arm", "label": group_label(dimension, arg), "runs": len(run_info),
            "agents": sum(g.agents for g in groups.values()),
            "groups": [groups[k].as_dict(durations) for k in sorted(groups)]}


CSV_COLUMNS = ("group", "runs", "agents", "turns", "errorTurns", "errorTurnRate", "calls", "callsPerTurn",
               "refusals", "cost", "costPerRun", "durationSeconds")


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
