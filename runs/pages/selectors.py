"""Reads behind the run pages and the JSON report (design.md "Reading the stream").

Everything here reads the projections (Agent, Holding, ModuleStore, Run) first. Where a page needs
the log itself (programs, one agent's per-turn context chart, refusals) it filters on the indexed
columns (type, agent, ok/failure) and takes a bounded window, so a page costs the same number of
queries whatever the length of the run.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from runs.models import Agent, Event, Holding, ModuleStore, Run
from runs.ingest.projections import MODULE_KINDS, as_list, breakdown_bands, classify, loads_record
from surfaces.arms import ARMS, member_separator, spell, spelling_for
from surfaces.catalogue import CAPABILITIES, ENDINGS, MODULES, MODULES_BY_ID, OPERATIONS, TOOLS

# Bounded windows over the log (a page never reads more than this many rows of one kind).
PROGRAMS_SHOWN = 50
CONTEXT_TURNS_SHOWN = 120
REFUSALS_READ = 5000

CONTEXT_BANDS = ("system", "user_prompt", "assistant", "tool_output", "compiler_error", "runtime_error",
                 "file_view", "text_view", "docs_view", "search_results", "skill", "memory", "task_list",
                 "history")
# The band a holder's store occupies in its context (spec/stream.md §7.4); history is the whole window.
STORE_BANDS = {"memories": "memory", "tasks": "task_list", "skills": "skill"}
ENDING_TOOLS = frozenset(t for e in ENDINGS.values() for t in e.tools)
DEFAULT_MEMORIES_SCOPE = CAPABILITIES["memories"].params["scope"]


def record(event_raw: str) -> dict:
    """The gg record of a stored line (unwrapping the host's `{"type":"gg","event":…}`); {} if none."""
    try:
        rec = classify(loads_record(event_raw))[1]
    except (ValueError, TypeError, AttributeError):
        return {}
    return rec if isinstance(rec, dict) else {}


def call_surface(agent: Agent) -> str:
    """Which record an agent's calls are read from: "api" for a code agent, "tool" for a
    tool-calling one, else whichever has evidence (console.md §1.4, callRecordSurface)."""
    if agent.execution_mode == "responses_as_code":
        return "api"
    if agent.execution_mode == "tool_calling":
        return "tool"
    if agent.api_calls:
        return "api"
    return "tool" if agent.tool_calls else ""


def failed_calls(agent: Agent) -> int:
    """Failed calls on the agent's own surface (tools and APIs are never summed)."""
    surface = call_surface(agent)
    return sum((agent.api_failures if surface == "api" else agent.tool_failures).values())


def error_tally(error_turns: dict, error_types: dict) -> list[dict]:
    """Error turns by kind, most first, each with its types beneath (gg's errorType, most first):
    [{kind, turns, types: [(type, n)]}]. Works for a run and for an agent alike."""
    def most_first(counts):
        return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return [{"kind": kind, "turns": n, "types": most_first(error_types.get(kind) or {})}
            for kind, n in most_first(error_turns or {})]


def error_types_flat(error_types: dict) -> dict:
    """{errorType: n} across kinds: gg's own ``byType`` shape (session_summary.errors)."""
    out = Counter()
    for types in (error_types or {}).values():
        out.update(types)
    return dict(sorted(out.items()))


# ---------------------------------------------------------------------------------------------
# Agents: the forest


@dataclass
class ForestRow:
    agent: Agent
    level: int
    tag: str = ""  # "", "exec", "fsm", "fork", or another transition word as reported
    predecessor_id: str = ""


def run_agents(run: Run) -> list[Agent]:
    return list(run.agents.all())


def agent_forest(agents: list[Agent]) -> list[ForestRow]:
    """The incarnations in forest order: root first, then other top-level agents (board
    dispatches) in order of arrival; under each, its subagents and forks (tagged `fork`) one level
    down, and after each, its exec / fsm successors chained at its own level."""
    by_pk = {a.pk: a for a in agents}
    by_id = {a.agent_id: a for a in agents}
    root = by_id.get("root")
    children, successors, tops = defaultdict(list), defaultdict(list), []
    for a in agents:
        pred = by_pk.get(a.predecessor_id)
        parent = by_pk.get(a.parent_id)
        if parent is None and a.parent_agent_id and a is not root:
            parent = root  # an unknown parent falls back under root (spec/stream.md §7.1)
        if pred is not None and a.transition_kind != "fork":
            successors[pred.pk].append(a)
        elif pred is not None:
            children[pred.pk].append(a)
        elif parent is not None and parent is not a:
            children[parent.pk].append(a)
        else:
            tops.append(a)
    tops.sort(key=lambda a: (a is not root, a.first_seq, a.pk))
    rows, seen = [], set()

    def visit(a, level, tag, pred):
        if a.pk in seen:
            return
        seen.add(a.pk)
        rows.append(ForestRow(a, level, tag, pred.agent_id if pred else ""))
        for child in children[a.pk]:
            visit(child, level + 1, "fork" if child.transition_kind == "fork" else "", a if child.transition_kind == "fork" else None)
        for succ in successors[a.pk]:
            visit(succ, level, succ.transition_kind or "successor", a)

    for a in tops:
        visit(a, 0, "", None)
    for a in agents:  # a cycle of links would leave agents unplaced: show them rather than lose them
        visit(a, 0, a.transition_kind, None)
    return rows


# ---------------------------------------------------------------------------------------------
# One agent's surface, joined to its counts at the operation


def function_spelling(api: dict, function: dict, language: str) -> str:
    """A bound function as the agent's arm writes it: the module's path joined onto its name."""
    return f"{api.get('path') or api.get('module') or ''}{member_separator(language)}{function.get('name') or ''}"


def call_spelling(agent: Agent, operation: str) -> str:
    return spelling_for(agent.apis, agent.program_language, operation)


def agent_surface_counts(agent: Agent) -> dict:
    """The offered surface with a figure on every entry (design.md "Surfaces").

    tools: [{name, calls, ending}] in offered order, ending calls included; apis: one entry per
    reported module, each function with {name, operation, spelling, calls} — two functions over one
    operation carry the same figure, and 0 is a measurement. `unoffered_calls` lists what the agent
    called that its surface does not offer (typically refused calls). An agent that reported no
    surface was not offered "nothing": its calls are `unjoined_calls` (no surface to join them to).
    """
    language = agent.program_language
    tools = [{"name": str(name), "calls": agent.tool_calls.get(str(name), 0), "ending": str(name) in ENDING_TOOLS}
             for name in agent.tools]
    apis, offered_ops = [], set()
    for api in agent.apis:
        if not isinstance(api, dict):
            continue
        module = str(api.get("module") or "")
        functions = []
        for fn in as_list(api.get("functions")):
            if not isinstance(fn, dict):
                continue
            op = str(fn.get("operation") or "")
            offered_ops.add(op)
            functions.append({"name": str(fn.get("name") or ""), "operation": op,
                              "spelling": function_spelling(api, fn, language), "calls": agent.api_calls.get(op, 0)})
        catalogue_module = MODULES_BY_ID.get(module)
        apis.append({"module": module, "path": str(api.get("path") or ""),
                     "brief": str(api.get("description") or (catalogue_module.brief if catalogue_module else "")),
                     "functions": functions})
    offered_tools = {t["name"] for t in tools}
    outside = (
        [{"name": call_spelling(agent, op), "operation": op, "calls": n}
         for op, n in sorted(agent.api_calls.items()) if op not in offered_ops]
        + [{"name": name, "operation": "", "calls": n}
           for name, n in sorted(agent.tool_calls.items()) if name not in offered_tools]
    )
    reported = agent.surface_reported
    return {"reported": reported, "mode": agent.execution_mode, "language": language,
            "doc_view_types": agent.doc_view_types, "tools": tools, "apis": apis,
            "withheld": [str(t) for t in agent.withheld],
            "unoffered_calls": outside if reported else [], "unjoined_calls": [] if reported else outside}


def reference_not_offered(agent: Agent, surface: dict) -> dict:
    """The catalogue entries this agent was not offered (the interesting case, console.md §1.5):
    for a code agent the operations, spelled in its arm and grouped by module; for a tool-calling
    agent the tools. Nothing for an agent that reported no surface (absent is not empty)."""
    if not surface["reported"]:
        return {"operations": [], "tools": [], "count": 0}
    # Operations for a code agent, unless its (older) surface offered tool names instead of apis.
    if surface["apis"] or (call_surface(agent) == "api" and not surface["tools"]):
        offered = {fn["operation"] for api in surface["apis"] for fn in api["functions"]}
        language = agent.program_language if agent.program_language in ARMS else ""
        by_module = []
        for module in MODULES:
            missing = [{"operation": op.id, "spelling": spell(language, op.id) if language else op.id}
                       for op in OPERATIONS if op.module == module.id and not op.retired and op.id not in offered]
            if missing:
                by_module.append({"module": module.id, "operations": missing})
        return {"operations": by_module, "tools": [], "count": sum(len(m["operations"]) for m in by_module)}
    offered = {t["name"] for t in surface["tools"]}
    tools = [{"name": t.name, "capability": t.capability, "condition": t.condition}
             for t in TOOLS if t.name not in offered]
    return {"operations": [], "tools": tools, "count": len(tools)}


def agent_holdings(agent: Agent) -> list[Holding]:
    return list(agent.holdings.select_related("store").order_by("position"))


def agent_programs(run: Run, agent: Agent) -> tuple[list[dict], bool]:
    """The agent's latest programs (code_execution), newest last, and whether older ones exist."""
    rows = list(Event.objects.filter(run=run, type="code_execution", agent_id=agent.agent_id)
                .order_by("-seq").values_list("seq", "turn", "raw")[:PROGRAMS_SHOWN + 1])
    more = len(rows) > PROGRAMS_SHOWN
    programs = []
    for seq, turn, raw in reversed(rows[:PROGRAMS_SHOWN]):
        rec = record(raw)
        logs = rec.get("logs") if isinstance(rec.get("logs"), list) else []
        programs.append({"seq": seq, "turn": turn, "ok": rec.get("ok"), "error": rec.get("error") or "",
                         "finished": rec.get("finished") or "", "logs": [str(line) for line in logs],
                         "logs_suppressed": rec.get("logsSuppressed") or 0,
                         "api_calls": rec.get("apiCalls") or 0, "tool_calls": rec.get("toolCalls") or 0})
    return programs, more


def agent_context_bands(run: Run, agent: Agent) -> dict:
    """The agent's context bands per turn (its latest CONTEXT_TURNS_SHOWN context_breakdowns),
    for the stacked chart: {turns: [{turn, total, window, bands: [(source, tokens)]}], bands, peak}."""
    rows = list(Event.objects.filter(run=run, type="context_breakdown", agent_id=agent.agent_id)
                .order_by("-seq").values_list("turn", "raw")[:CONTEXT_TURNS_SHOWN + 1])
    more = len(rows) > CONTEXT_TURNS_SHOWN
    turns, seen_bands = [], set()
    for turn, raw in reversed(rows[:CONTEXT_TURNS_SHOWN]):
        rec = record(raw)
        bands = breakdown_bands(rec)
        seen_bands.update(k for k, v in bands.items() if v)
        total = rec.get("totalTokens") if isinstance(rec.get("totalTokens"), (int, float)) else sum(bands.values())
        window = rec.get("windowLimit") if isinstance(rec.get("windowLimit"), (int, float)) else None
        turns.append({"turn": turn, "total": total, "window": window, "bands": bands})
    order = [b for b in CONTEXT_BANDS if b in seen_bands] + sorted(seen_bands - set(CONTEXT_BANDS))
    peak = max([t["total"] for t in turns] + [1])
    for t in turns:
        t["bands"] = [(b, t["bands"].get(b, 0)) for b in order if t["bands"].get(b, 0)]
    return {"turns": turns, "bands": order, "peak": peak, "more": more}


# ---------------------------------------------------------------------------------------------
# Module stores


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


def run_holdings(run: Run) -> list[Holding]:
    """Every roster row of the run, with its agent (one query)."""
    return list(Holding.objects.filter(agent__run=run).select_related("agent").order_by("agent__first_seq", "position"))


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
                rows[src].append({**base, "event": "swapped", "other": dst})
                rows[dst].append({**base, "event": "swapped", "other": src})
            elif disposition in ("carried", "linked"):
                if src or dst:
                    rows[src or dst].append({**base, "event": disposition, "other": ""})
            elif disposition == "copied":
                if src:
                    rows[src].append({**base, "event": "copied", "other": dst})
                if dst:
                    rows[dst].append({**base, "event": "copied", "other": src})
            elif disposition == "dropped" and src:
                rows[src].append({**base, "event": "dropped", "other": ""})
            elif disposition == "initialized":
                if src and src != dst:
                    rows[src].append({**base, "event": "dropped", "other": dst})
                if dst:
                    rows[dst].append({**base, "event": "created", "other": ""})
    return rows


def store_index(run: Run, agents: list[Agent], holdings: list[Holding]) -> list[StoreView]:
    """One entry per store, whatever the number of holders, in kind order then id: holders,
    lifetime (created at its first holder, then every succession touching it) and sharing."""
    views = {s.pk: StoreView(s) for s in ModuleStore.objects.filter(run=run)}
    for h in holdings:
        if h.store_id in views:
            views[h.store_id].holders.append(h)
    transitions = _transition_lifetime(agents)
    for view in views.values():
        first = view.holders[0] if view.holders else None
        created = [{"event": "created", "agent": first.agent.agent_id if first else "", "from_agent": "",
                    "transition": "", "kind": view.kind, "other": "", "origin": first.origin if first else ""}]
        view.lifetime = created + [r for r in transitions.get(view.module_id, ()) if r["event"] != "created"]
        view.sharing = _sharing(view.holders)
        view.holder_costs = {h.agent.agent_id: holder_cost(h) for h in view.holders}
        # A store is dropped only when every holder has released it (spec/stream.md §7.4).
        releases = {r["from_agent"] for r in view.lifetime if r["event"] == "dropped"}
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


# ---------------------------------------------------------------------------------------------
# Divergences: declared vs observed (spec/stream.md §7.4)


def _profile(capability_set, profile_id: str):
    if not isinstance(capability_set, dict):
        return None
    for p in as_list(capability_set.get("agents")):
        if isinstance(p, dict) and profile_id and profile_id in (p.get("slug"), p.get("name")):
            return p
    return None


def declared_memories_scope(capability_set, agent: Agent, holding: Holding) -> str:
    """The memories scope the agent's profile declared (gg's default `isolated`), or the rule the
    holder itself reports when the captured configuration does not describe the profile; "" when
    the profile it describes does not declare memories, or switches them off."""
    profile = _profile(capability_set, agent.profile_id)
    if profile is not None:
        for cap in as_list(profile.get("capabilities")):
            if isinstance(cap, dict) and cap.get("id") == "memories":
                if cap.get("enabled") is False:
                    return ""
                params = cap.get("params") if isinstance(cap.get("params"), dict) else {}
                return str(params.get("scope") or DEFAULT_MEMORIES_SCOPE)
        return ""  # the captured profile does not declare memories: nothing to diverge from
    return holding.scope


def divergence_count(run: Run) -> int:
    """For the tab badge; remembered on the run object so a page asks once."""
    if not hasattr(run, "_divergence_count"):
        run._divergence_count = len(run_divergences(run, run_agents(run), run_holdings(run)))
    return run._divergence_count


def run_divergences(run: Run, agents: list[Agent], holdings: list[Holding]) -> list[dict]:
    """Each divergence as {kind, agentId, moduleKind, declared, observed, cause}.

    Only runs that reported rosters can diverge; a run without agent_modules shows none, whatever
    its transitions say.
    """
    out = []
    if not holdings:
        run._divergence_count = 0
        return out
    memories = [h for h in holdings if h.kind == "memories" and h.enabled and h.module_id]
    declared = {h.pk: declared_memories_scope(run.capability_set, h.agent, h) for h in memories}

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


# ---------------------------------------------------------------------------------------------
# Refusal roster: calls refused before they ran (design.md "Refusal roster")

REFUSED_LINE = re.compile(r"the program's `(?P<name>[^`]+)` call was refused before it ran:\s*(?P<message>.*)", re.S)
SUPPRESSED_LINE = re.compile(r"(?P<n>\d+) further refused call\(s\) were not recorded")


def _names_to_operations(agent: Agent) -> dict[str, str]:
    """Every way this agent could have written an operation -> the operation (for gg's log lines)."""
    names = {op.id: op.id for op in OPERATIONS}
    if agent.program_language in ARMS:
        names.update({spell(agent.program_language, op.id): op.id for op in OPERATIONS})
    for api in agent.apis:
        if isinstance(api, dict):
            for fn in as_list(api.get("functions")):
                if isinstance(fn, dict) and fn.get("operation") and isinstance(fn["operation"], str):
                    names.setdefault(function_spelling(api, fn, agent.program_language), fn["operation"])
                    names.setdefault(str(fn.get("name")), fn["operation"])
    return names


def run_refusals(run: Run, agents: list[Agent]) -> dict:
    """Per agent, per turn, each call refused before it ran, with the counts gg's cap suppressed.

    A refusal is a failed api_result gg's "refused before it ran" line names (any class), or one
    that failed `unavailable`; the line gives the message, the result the class. A line with no
    result beside it (older streams) still counts. Totals per operation across the run.
    """
    failed = list(Event.objects.filter(run=run, type="api_result", ok=False).order_by("seq")
                  .values_list("seq", "agent_id", "turn", "operation", "failure")[:REFUSALS_READ])
    lines = list(Event.objects.filter(run=run, type="log", raw__contains="refused").order_by("seq")
                 .values_list("seq", "agent_id", "turn", "raw")[:REFUSALS_READ])
    truncated = len(failed) == REFUSALS_READ or len(lines) == REFUSALS_READ
    by_id = {a.agent_id: a for a in agents}
    results = defaultdict(list)  # (agent, turn) -> [[seq, operation, failure, matched]]
    for seq, agent_id, turn, operation, failure in failed:
        results[(agent_id, turn)].append([seq, operation, failure, False])
    entries = defaultdict(list)  # agent -> [entry]
    suppressed = defaultdict(Counter)  # agent -> {turn: n}
    names = {}
    for seq, agent_id, turn, raw in lines:
        message = record(raw).get("message")
        if not isinstance(message, str):
            continue
        if m := SUPPRESSED_LINE.search(message):
            suppressed[agent_id][turn] += int(m["n"])
            continue
        m = REFUSED_LINE.search(message)
        if not m:
            continue
        agent = by_id.get(agent_id)
        if agent is not None and agent_id not in names:
            names[agent_id] = _names_to_operations(agent)
        operation = names.get(agent_id, {}).get(m["name"], "")
        match = next((r for r in results[(agent_id, turn)] if not r[3] and operation and r[1] == operation), None)
        if match:
            match[3] = True
        entries[agent_id].append({"seq": match[0] if match else seq, "turn": turn, "operation": operation,
                                  "written": m["name"], "failure": match[2] if match else "",
                                  "message": m["message"].strip()})
    for (agent_id, turn), rows in results.items():
        for seq, operation, failure, matched in rows:
            if not matched and failure == "unavailable":
                entries[agent_id].append({"seq": seq, "turn": turn, "operation": operation, "written": "",
                                          "failure": failure, "message": ""})
    roster, totals = [], Counter()
    for agent in agents:
        mine = sorted(entries.get(agent.agent_id, ()), key=lambda e: e["seq"])
        capped = suppressed.get(agent.agent_id, Counter())
        if not mine and not capped:
            continue
        turns = defaultdict(lambda: {"entries": [], "suppressed": 0})
        for e in mine:
            spelled = call_spelling(agent, e["operation"]) if e["operation"] else ""
            # The surface has no spelling for an operation it does not offer: gg's line quotes the
            # program's own, which is a fact rather than a guess.
            e["spelling"] = e["written"] if e["written"] and (not spelled or spelled == e["operation"]) else spelled
            turns[e["turn"]]["entries"].append(e)
            totals[e["operation"] or e["spelling"]] += 1
        for turn, n in capped.items():
            turns[turn]["suppressed"] += n
        roster.append({"agent": agent, "turns": [{"turn": t, **turns[t]} for t in sorted(turns, key=lambda t: t or 0)],
                       "refused": len(mine), "suppressed": sum(capped.values())})
    return {"agents": roster, "totals": totals.most_common(), "refused": sum(totals.values()),
            "suppressed": sum(r["suppressed"] for r in roster), "truncated": truncated, "window": REFUSALS_READ}


# ---------------------------------------------------------------------------------------------
# Arms: the within-run comparison (seeds/000 "Per-agent arm fields")


def arms_comparison(agents: list[Agent]) -> dict:
    """Agents grouped by (programLanguage, docViewTypes), side by side: calls per operation (tool
    names for tool-calling agents), docs_view and search_results tokens summed over every turn's
    context, turns and error turns. Read off the projections alone."""
    arms = {}
    for agent in agents:
        key = (agent.program_language, agent.doc_view_types)
        arm = arms.setdefault(key, {"language": key[0], "doc_view_types": key[1], "agents": [], "turns": 0,
                                    "error_turns": 0, "calls": Counter(), "docs_view": 0, "search_results": 0,
                                    "modes": set()})
        arm["agents"].append(agent)
        arm["modes"].add(agent.execution_mode)
        arm["turns"] += agent.turns
        arm["error_turns"] += agent.error_turn_count
        arm["calls"].update(agent.api_calls)
        arm["calls"].update(agent.tool_calls)
        arm["docs_view"] += agent.context_bands.get("docs_view", 0)
        arm["search_results"] += agent.context_bands.get("search_results", 0)
    ordered = sorted(arms.values(), key=lambda a: (not a["language"], a["language"], a["doc_view_types"]))
    for arm in ordered:
        arm["modes"] = sorted(m for m in arm["modes"] if m)
        arm["label"] = (f"{arm['language']} · {arm['doc_view_types'] or 'docViewTypes unreported'}" if arm["language"]
                        else ", ".join(arm["modes"]) or "no surface reported")
        arm["call_count"] = sum(arm["calls"].values())
    rank = {op.id: i for i, op in enumerate(OPERATIONS)}
    keys = sorted({k for arm in ordered for k in arm["calls"]}, key=lambda k: (k not in rank, rank.get(k, 0), k))
    table = [{"operation": k, "calls": [arm["calls"].get(k, 0) for arm in ordered]} for k in keys]
    return {"arms": ordered, "table": table}
