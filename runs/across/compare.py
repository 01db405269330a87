"""Two runs (or two agents) side by side: the capability sets as a structural diff, agents paired by
profile slug and role (then by order), and per pair and in total every figure with its delta (b − a).

Each side's figures are read off what its run report is built from (runs.pages.report: an agent's
document, the run's counts, refusal totals, divergences and stores), so a delta here is exactly the
difference of the two reports; the per-agent token classes and cost come from the agent's usage
projection and the peak context from RunFacts, the two figures the report leaves out. A page reads the
documents of the pairs it shows only, never the whole report.
"""

from __future__ import annotations

from collections import Counter, defaultdict

from runs.ingest import facts as run_facts
from runs.models import Agent, Run, RunFacts
from runs.stream.profiles import find_profile
from runs.stream.usage import TOKEN_CLASSES
from runs.pages import run_selectors
from runs.pages.agents import FOREST_FIELDS, SURFACE_FIELDS, agent_forest
from runs.pages.common import agent_values, paged
from runs.pages.divergences import DIVERGENCE_FIELDS, divergence_holdings, run_divergences
from runs.pages.refusals import refusal_totals
from runs.pages.report import agent_docs, surface_doc
from runs.pages.stores import store_kinds

LIST_KEYS = ("slug", "id", "agent", "name", "kind")  # what names an entry of a list of objects


def _key(item, index):
    if isinstance(item, dict):
        for k in LIST_KEYS:
            if isinstance(item.get(k), str) and item[k]:
                return item[k]
    return f"#{index}"


def structural_diff(a, b, path: str = "") -> list[dict]:
    """Every difference between two JSON values as ``{path, change, a, b}`` (change: added, removed,
    changed); lists of objects are matched by their slug/id/name, lists of scalars as sets."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in list(a) + [k for k in b if k not in a]:
            sub = f"{path}{k}" if str(k).startswith("[") else f"{path}.{k}" if path else str(k)
            if k not in b:
                out.append({"path": sub, "change": "removed", "a": a[k], "b": None})
            elif k not in a:
                out.append({"path": sub, "change": "added", "a": None, "b": b[k]})
            else:
                out += structural_diff(a[k], b[k], sub)
        return out
    if isinstance(a, list) and isinstance(b, list):
        if all(not isinstance(x, (dict, list)) for x in a + b):
            gone = [x for x in a if x not in b]
            new = [x for x in b if x not in a]
            out = [{"path": path, "change": "removed", "a": x, "b": None} for x in gone]
            return out + [{"path": path, "change": "added", "a": None, "b": x} for x in new]
        ka = {f"[{_key(x, i)}]": x for i, x in enumerate(a)}
        kb = {f"[{_key(x, i)}]": x for i, x in enumerate(b)}
        return structural_diff(ka, kb, path) if len(ka) == len(a) and len(kb) == len(b) else (
            [] if a == b else [{"path": path, "change": "changed", "a": a, "b": b}])
    if a != b or type(a) is not type(b):
        return [{"path": path, "change": "changed", "a": a, "b": b}]
    return []


def declared(run: Run) -> dict:
    """What the run was declared with: its capability set, plus the launch's provider."""
    out = dict(run.capability_set) if isinstance(run.capability_set, dict) else {}
    if isinstance(run.launch_spec, dict) and "provider" in run.launch_spec:
        out["provider"] = run.launch_spec["provider"]
    return out


def _declared_diff(a: dict, b: dict) -> dict:
    """`declared`: what differs between two declarations; `undeclared`: the sides that declared
    nothing (no capability set, or no profile in it), whose diff says nothing of them."""
    return {"declared": structural_diff(a, b), "undeclared": [side for side, d in (("a", a), ("b", b)) if not d]}


# ---------------------------------------------------------------------------------------------
# Figures of one side


def _num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def agent_calls(doc: dict) -> dict:
    """{operation or tool: calls} off the report's surface: every offered entry (0 kept), then
    what was called outside it."""
    return surface_calls(doc["surface"])


def surface_calls(s: dict) -> dict:
    """`agent_calls` of an agent's surface document (report.surface_doc)."""
    calls = {t["name"]: t["calls"] for t in s["tools"]}
    for api in s["apis"]:
        for fn in api["functions"]:
            if fn["calls"] is not None:  # None: a tool-keyed legacy function, its calls on its tool
                calls[fn.get("operation") or fn["name"]] = fn["calls"]
    for row in s["unofferedCalls"] + s["callsWithoutSurface"]:
        calls[row["operation"] or row["name"]] = row["calls"]
    return calls


def _failures(api: dict, tool: dict) -> dict:
    out = {f"api {k}": v for k, v in (api or {}).items()}
    out.update({f"tool {k}": v for k, v in (tool or {}).items()})
    return out


def refused_by_operation(doc: dict) -> dict:
    """An agent's refused calls per operation (its spelling where it names none), from the report's
    exact groups: its `refusals` list only each group's first entries."""
    counts = Counter()
    for group in doc["refusalGroups"]:
        counts[group["operation"] or group["spelling"]] += group["refused"]
    return dict(counts)


def agent_figures(doc: dict, usage: dict, peak) -> dict:
    usage = usage if isinstance(usage, dict) else {}
    return {
        "turns": doc["turns"], "errorTurns": doc["errorTurns"], "errorTurnsByKind": dict(doc["errorTurnsByKind"]),
        "calls": doc["calls"], "callsByOperation": agent_calls(doc),
        "refusalsByOperation": refused_by_operation(doc),
        "failuresByClass": _failures(doc["apiFailures"], doc["toolFailures"]),
        "tokens": {c: (usage.get("tokens") or {}).get(c) for c in TOKEN_CLASSES},
        "cost": (usage.get("cost") or {}).get("comparable"),
        "durationSeconds": doc["durationSeconds"],
        "peakContext": peak,
    }


def run_figures(run: Run, agents: list[Agent], peaks: dict) -> dict:
    """The run's figures as its report has them, off the selectors it is built from: `agents`, every
    one of the run's (ROSTER_FIELDS, in forest order); `peaks`, RunFacts.peak_context."""
    header = run_selectors.run_header(run)
    usage = header["usage"]
    memories, rosters = divergence_holdings(run, agents)
    divergences = Counter(d["kind"] for d in run_divergences(run, agents, memories, rosters=rosters))
    stores = store_kinds(run)
    peaks = [peaks[a.agent_id] for a in agents if peaks.get(a.agent_id) is not None]
    return {
        "agents": run.agent_count, "turns": run.turn_count, "errorTurns": run.error_turn_count,
        "errorTurnsByKind": dict(run.error_turns), "calls": run.call_count,
        "callsByOperation": dict(calls_summed(agents)),
        "refusalsByOperation": dict(refusal_totals(run)),
        "failuresByClass": _failures(run.api_failures, run.tool_failures),
        "tokens": {c: usage["tokens"].get(c) for c in TOKEN_CLASSES},
        "cost": usage["cost"].get("comparable") if usage["cost"] else None,
        "durationSeconds": header["duration"].total_seconds() if header["duration"] is not None else None,
        "peakContext": max(peaks) if peaks else None,
        "divergences": sum(divergences.values()), "divergencesByKind": dict(divergences),
        "stores": sum(stores.values()), "storesByKind": stores,
    }


def calls_summed(agents: list[Agent]) -> Counter:
    """The agents' `agent_calls` summed, in their order. What `surface_doc` reads of an agent is keyed by
    its decoded values' identity: agents whose surface and tallies read the same share them
    (common.agent_values), and each such surface is joined to its calls once (on a run of 8,278
    agents, 4,177 of them)."""
    out, joined = Counter(), {}
    for a in agents:
        key = tuple(v if isinstance(v, (str, bool)) else id(v) for v in map(a.__dict__.get, SURFACE_FIELDS))
        if key not in joined:
            joined[key] = surface_calls(surface_doc(a))
        out.update(joined[key])
    return out


# ---------------------------------------------------------------------------------------------
# Side by side


def delta(a, b):
    a, b = _num(a), _num(b)
    if a is None and b is None:
        return None
    return (b or 0) - (a or 0)


def side_by_side(fa: dict, fb: dict) -> list[dict]:
    """[{figure, key, a, b, delta}] for every figure; a keyed figure gets one row per key of either
    side (a key one side lacks reads 0 there: a count it never made)."""
    rows = []
    for figure in fa:
        va, vb = fa[figure], fb.get(figure)
        if isinstance(va, dict):
            for key in list(va) + sorted(k for k in vb if k not in va):
                x, y = va.get(key, 0 if figure != "tokens" else None), vb.get(key, 0 if figure != "tokens" else None)
                rows.append({"figure": figure, "key": key, "a": x, "b": y, "delta": delta(x, y)})
        else:
            rows.append({"figure": figure, "key": "", "a": va, "b": vb, "delta": delta(va, vb)})
    return rows


# What a side reads of every agent of its run: its place in the forest, what pairs and names it (`roster_doc`),
# its surface and calls (the run's calls per operation are their sum) and what its divergences read.
ROSTER_FIELDS = tuple(dict.fromkeys((*FOREST_FIELDS, *DIVERGENCE_FIELDS, "role", "model_id", "turns", *SURFACE_FIELDS)))
FIGURES_BY_ID = 500  # past this many agents' figures at once, the run's documents are read whole (not an IN of ids)


def roster_doc(agent: Agent) -> dict:
    """The fields of the agent's report document that pair and name it (report._agent_docs)."""
    return {"agentId": agent.agent_id, "profileId": agent.profile_id, "modelId": agent.model_id,
            "executionMode": agent.execution_mode or None, "programLanguage": agent.program_language or None,
            "docViewTypes": agent.doc_view_types or None, "role": agent.role or None, "turns": agent.turns}


class Side:
    """One run's agents, per-agent usage and peaks: read once, compared as often as asked. Its agents are
    listed in the report's order with what pairs them (`roster_doc`), and each gets its document and
    figures when it is compared (`read_figures`): a page of pairs reads those it shows. With `agent_ids`,
    those agents' documents and figures alone (no run figures): two agents' comparison reads two agents,
    whatever the size of their runs."""

    def __init__(self, run: Run, agent_ids: list[str] | None = None):
        self.run = run
        self.facts = RunFacts.objects.filter(run=run).first() or run_facts.refresh(run)
        if agent_ids is None:
            agents = [row.agent for row in agent_forest(agent_values(run, ROSTER_FIELDS))]
            self.agents = [{"doc": roster_doc(a)} for a in agents]
            self.figures = run_figures(run, agents, self.facts.peak_context)
        else:
            self.agents = [{"doc": doc} for doc in agent_docs(run, agent_ids, timing=False)]
            self.read_figures(self.agents)

    def read_figures(self, agents: list[dict]) -> None:
        """Each of `agents` (this side's) with its whole document and its figures, once."""
        wanted = [a for a in agents if "figures" not in a]
        if not wanted:
            return
        ids = [a["doc"]["agentId"] for a in wanted]
        by_id = len(ids) <= FIGURES_BY_ID
        docs = {d["agentId"]: d for d in agent_docs(self.run, ids if by_id else None, timing=False)}
        rows = Agent.objects.filter(run=self.run)
        usage = dict((rows.filter(agent_id__in=ids) if by_id else rows).values_list("agent_id", "usage"))
        for a in wanted:
            a["doc"] = doc = docs[a["doc"]["agentId"]]
            a["figures"] = agent_figures(doc, usage.get(doc["agentId"]), self.facts.peak_context.get(doc["agentId"]))

    def agent(self, agent_id: str):
        return next((a for a in self.agents if a["doc"]["agentId"] == agent_id), None)

    def profile(self, slug: str) -> dict:
        return find_profile(declared(self.run), slug) or {}


def pair_agents(a: list[dict], b: list[dict]):
    """Pairs by (profile slug, role), in report order within a key; the rest unpaired."""
    by_key = defaultdict(list)
    for agent in b:
        by_key[(agent["doc"]["profileId"], agent["doc"]["role"])].append(agent)
    pairs, only_a = [], []
    for agent in a:
        mates = by_key.get((agent["doc"]["profileId"], agent["doc"]["role"]))
        if mates:
            pairs.append((agent, mates.pop(0)))
        else:
            only_a.append(agent)
    paired_b = {id(y) for _, y in pairs}
    return pairs, only_a, [agent for agent in b if id(agent) not in paired_b]


def _agent_ref(run: Run, agent: dict) -> dict:
    doc = agent["doc"]
    return {"runId": run.pk, "run": run.name, "agentId": doc["agentId"], "profileId": doc["profileId"],
            "role": doc["role"], "programLanguage": doc["programLanguage"], "docViewTypes": doc["docViewTypes"],
            "executionMode": doc["executionMode"], "modelId": doc["modelId"], "turns": doc["turns"]}


def _run_ref(side: Side) -> dict:
    """The run as the runs list and its header name it: `state` is its status, or "stale" (a running
    run no record reached for a while) or "queued" (run_selectors.run_liveness)."""
    run = side.run
    return {"id": run.pk, "name": run.name, "status": run.status,
            "state": run_selectors.run_liveness(run, side.facts.last_event_at)["state"], "source": run.source}


def compare_runs(a: Run, b: Run, window: tuple[str | None, int] | None = None) -> dict:
    """The two runs' comparison, every pair of agents side by side; with `window` (the index of the first
    pair, as an address's text, and how many), those pairs only and `pairPages`, where they sit among
    all (common.paged), their agents' documents alone read."""
    sa = Side(a)
    sb = sa if b.pk == a.pk else Side(b)  # a run beside itself: its report read once
    pairs, only_a, only_b = pair_agents(sa.agents, sb.agents)
    out = {
        "kind": "runs",
        "a": _run_ref(sa), "b": _run_ref(sb),
        **_declared_diff(declared(a), declared(b)),
        "total": side_by_side(sa.figures, sb.figures),
    }
    if window is not None:
        pairs, out["pairPages"] = paged(pairs, *window)
    sa.read_figures([x for x, _ in pairs])
    sb.read_figures([y for _, y in pairs])
    return {**out,
            "pairs": [{"a": _agent_ref(a, x), "b": _agent_ref(b, y),
                       "figures": side_by_side(x["figures"], y["figures"])} for x, y in pairs],
            "unpairedA": [_agent_ref(a, x) for x in only_a],
            "unpairedB": [_agent_ref(b, y) for y in only_b]}


class NoSuchAgent(LookupError):
    pass


def compare_agents(a: Run, agent_a: str, b: Run, agent_b: str) -> dict:
    """Two agents of one run or of two: their profiles' diff and their figures side by side."""
    if a.pk == b.pk:
        sa = sb = Side(a, [agent_a, agent_b])
    else:
        sa, sb = Side(a, [agent_a]), Side(b, [agent_b])
    x, y = sa.agent(agent_a), sb.agent(agent_b)
    for run, agent_id, found in ((a, agent_a, x), (b, agent_b, y)):
        if found is None:
            raise NoSuchAgent(f"Run {run.name!r} has no agent {agent_id!r}.")
    return {
        "kind": "agents",
        "a": _run_ref(sa), "b": _run_ref(sb),
        "agentA": _agent_ref(a, x), "agentB": _agent_ref(b, y),
        **_declared_diff(sa.profile(x["doc"]["profileId"]), sb.profile(y["doc"]["profileId"])),
        "figures": side_by_side(x["figures"], y["figures"]),
    }
