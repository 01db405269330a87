"""The Agents tab (templates/runs/agents.html) and one agent's page (templates/runs/agent.html):
the forest of incarnations, and an agent's surface joined to its counts, its roster, its latest
programs, its per-turn context chart (compactions marked, the fullness meter) and what its material
cost by residency. Tests: tests/pages/test_agents.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.http import Http404
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from runs.access import agent_feed_url, agent_url, run_or_404
from runs.stream.record import as_list, gg_record, whole_number
from runs.stream.prices import model_prices
from runs.stream.usage import breakdown_bands
from runs.models import Agent, Event, Holding, Run
from runs.pages.common import (agent_values, call_spelling, call_surface, calls_once, failed_calls, paged,
                               run_context, run_holdings, tool_keyed)
from runs.pages.costs import agent_spend
from runs.pages.divergences import DIVERGENCE_FIELDS, run_divergences
from runs.pages.profile_modules import profile_modules
from runs.pages.agent_timing import agent_timing
from runs.pages.origins import error_turn_numbers
from runs.pages.profiles import PROFILE_FIELDS, group_keys, profile_rows
from runs.pages.programs import agent_programs
from runs.pages import material
from surfaces.arms import ARMS, function_spelling, spell
from surfaces.catalogue import ENDINGS, MODULES, MODULES_BY_ID, OPERATIONS, TOOLS

# Bounded windows over the log (a page never reads more than this many rows of one kind).
CONTEXT_TURNS_SHOWN = 120
CONTEXT_BANDS = ("system", "user_prompt", "assistant", "tool_output", "compiler_error", "runtime_error",
                 "file_view", "text_view", "docs_view", "search_results", "skill", "memory", "task_list",
                 "history")
INDENT_LEVELS = 10  # nesting levels drawn as indentation (ForestRow.indent)
AGENTS_SHOWN = 200  # the roster's rows a page (a run of thousands of agents is listed in pages)
FIND_CHARS = Agent._meta.get_field("agent_id").max_length  # what the roster's search reads of its text
# What the tab reads of no agent (one agent's page does): its timing and context figures were 4.9 of the
# 12.4 MB of agent JSON on a run of 12,747 agents.
ROSTER_UNREAD = ("material", "timing", "context_bands", "error_turns", "error_types", "error_facts")
# The band a holder's store occupies in its context (spec/stream.md §7.4); history is the whole window.
ENDING_TOOLS = frozenset(t for e in ENDINGS.values() for t in e.tools)


@require_GET
def agents_page(request, pk):
    run = run_or_404(pk)
    # Every agent read for what the forest, the stores, the divergences and the profiles need of it; the shown
    # page's agents whole but for ROSTER_UNREAD.
    agents = agent_values(run, TAB_FIELDS)
    table = model_prices()
    forest = agent_forest(agents)
    key_of = group_keys(run, agents)
    profile = request.GET.get("profile")  # one profile's instances: the per-profile counts link here
    if profile is not None:
        forest = [row for row in forest if key_of[row.agent.pk] == profile]
    # The incarnations that stood in one state of a machine: the Overview's machine counts link here.
    machine, state = request.GET.get("machine", ""), request.GET.get("state")
    if state is not None:
        forest = [row for row in forest if row.agent.fsm_state == state and row.agent.fsm_id == machine]
    kept = {"profile": profile} if profile is not None else {}  # what the roster's page links carry
    if state is not None:
        kept.update(machine=machine, state=state)
    # Finding agents among thousands: a part of the id, a status, or both.
    statuses = sorted({a.status for a in agents})
    find, status = request.GET.get("find", "").strip()[:FIND_CHARS], request.GET.get("status", "")
    if find:
        needle = find.casefold()
        forest = [row for row in forest if needle in row.agent.agent_id.casefold()]
    if status:
        forest = [row for row in forest if row.agent.status == status]
    kept.update({k: v for k, v in (("find", find), ("status", status)) if v})
    shown, pages = paged(forest, request.GET.get("agents"), AGENTS_SHOWN)
    whole = run.agents.defer(*ROSTER_UNREAD).in_bulk([row.agent.pk for row in shown])
    for row in shown:
        row.agent = whole.get(row.agent.pk, row.agent)
    # Each figure links where it comes from: the agent's turn rows and failed calls in the feed, its
    # calls per operation and its error turns on its page.
    rows = [{"row": row, "failed": failed_calls(row.agent), "surface": call_surface(row.agent),
             "spend": agent_spend(row.agent, table), "href": agent_url(run.pk, row.agent.agent_id),
             "feed": agent_feed_url(run.pk, row.agent.agent_id)} for row in shown]
    holdings = run_holdings(run, agents, enabled_only=True)
    modules = profile_modules(run, agents, holdings, run_divergences(run, agents, holdings))
    profiles = profile_rows(run, agents, key_of)
    for p in profiles:
        p["modules"] = modules.get(p["group"], {"kinds": [], "divergences": [], "count": 0, "more": 0})
    return render(request, "runs/agents.html", run_context(
        run, "agents", rows=rows, pages=pages, profiles=profiles, profile=profile, machine=machine, state=state,
        find=find, find_chars=FIND_CHARS, status=status, statuses=statuses,
        matched=len(forest) if find or status else None,
        keep=f"{urlencode(kept)}&" if kept else ""))


@require_GET
def agent_page(request, pk, agent_id):
    run = run_or_404(pk)
    agent = run.agents.filter(agent_id=agent_id).select_related("parent", "predecessor").first()
    if agent is None:
        raise Http404(f"Run {run.name!r} has no agent {agent_id!r}.")
    surface = agent_surface_counts(agent)
    before = request.GET.get("programs_before", "")
    before = whole_number(before)  # anything else (None): the latest programs
    programs, more_programs = agent_programs(run, agent.agent_id, before=before)
    return render(request, "runs/agent.html", run_context(
        run, "agents", agent=agent, surface=surface, call_surface=call_surface(agent),
        feed=agent_feed_url(run.pk, agent.agent_id),
        not_offered=reference_not_offered(agent, surface), holdings=agent_holdings(agent),
        programs=programs, more_programs=more_programs, programs_before=before, context=agent_context_bands(run, agent),
        material=material.agent_material(run, agent),
        timing=agent_timing(run, agent), language=agent.program_language,
        error_turn_list=error_turn_numbers(run, agent.agent_id) if agent.error_turn_count else [],
    ))


# ---------------------------------------------------------------------------------------------
# Agents: the forest


@dataclass
class ForestRow:
    agent: Agent
    level: int
    tag: str = ""  # "", "exec", "fsm", "fork", or another transition word as reported
    predecessor_id: str = ""

    @property
    def indent(self) -> int:
        """The level drawn: a chain of subagents thousands deep would push its rows off the page;
        past INDENT_LEVELS the row says its depth instead."""
        return min(self.level, INDENT_LEVELS)


# What `agent_forest` reads of an agent (a page that reads no more of them reads only these).
FOREST_FIELDS = ("agent_id", "parent_agent_id", "parent_id", "predecessor_id", "transition_kind", "first_seq")
TAB_FIELDS = tuple(dict.fromkeys((*FOREST_FIELDS, "fsm_id", "fsm_state", "status", *DIVERGENCE_FIELDS,
                                  *PROFILE_FIELDS)))


def agent_forest(agents: list[Agent]) -> list[ForestRow]:
    """The incarnations in forest order: root first, then other top-level agents (board
    dispatches) in order of arrival; under each, its subagents and forks (tagged `fork`) one level
    down, and after each, its exec / fsm successors chained at its own level."""
    # Keyed by `id`, not `pk`: the property is a call per read (66,000 of them on 8,278 agents).
    by_pk = {a.id: a for a in agents}
    by_id = {a.agent_id: a for a in agents}
    root = by_id.get("root")
    children, successors, tops = {}, {}, []
    for a in agents:
        pred = by_pk.get(a.predecessor_id)
        parent = by_pk.get(a.parent_id)
        if parent is None and a.parent_agent_id and a is not root:
            parent = root  # an unknown parent falls back under root (spec/stream.md §7.1)
        if pred is not None and a.transition_kind != "fork":
            successors.setdefault(pred.id, []).append(a)
        elif pred is not None:
            children.setdefault(pred.id, []).append(a)
        elif parent is not None and parent is not a:
            children.setdefault(parent.id, []).append(a)
        else:
            tops.append(a)
    tops.sort(key=lambda a: (a is not root, a.first_seq, a.id))
    rows, seen = [], set()

    def visit(top, tag):
        # Depth first with a stack of its own: a chain of thousands of successions or subagents is
        # deeper than Python's recursion allows.
        stack = [(top, 0, tag, None)]
        while stack:
            a, level, tag, pred = stack.pop()
            if a.id in seen:
                continue
            seen.add(a.id)
            rows.append(ForestRow(a, level, tag, pred.agent_id if pred else ""))
            # Children first, then successors, each in arrival order: pushed the other way round.
            stack.extend([(succ, level, succ.transition_kind or "successor", a)
                          for succ in reversed(successors.get(a.id, ()))])
            stack.extend([(child, level + 1, "fork", a) if child.transition_kind == "fork"
                          else (child, level + 1, "", None) for child in reversed(children.get(a.id, ()))])

    for a in tops:
        visit(a, "")
    for a in agents:  # a cycle of links would leave agents unplaced: show them rather than lose them
        if a.id not in seen:
            visit(a, a.transition_kind)
    return rows


# ---------------------------------------------------------------------------------------------
# One agent's surface, joined to its counts at the operation


# What `agent_surface_counts` reads of an agent.
SURFACE_FIELDS = ("surface_reported", "execution_mode", "program_language", "doc_view_types", "tools", "apis",
                  "withheld", "api_calls", "tool_calls", "api_tools")


def agent_surface_counts(agent: Agent) -> dict:
    """The offered surface with a figure on every entry (design.md "Surfaces").

    tools: [{name, calls, ending}] in offered order, ending calls included; apis: one entry per
    reported module, each function with {name, operation, spelling, calls} — two functions over one
    operation carry the same figure, and 0 is a measurement. A tool-keyed legacy agent (common.tool_keyed)
    has each call once, on the tool its bracket bridged: a function's figure is only what bridged no
    tool, and None (not 0) when there is none. `unoffered_calls` lists what the agent
    called that its surface does not offer (typically refused calls). An agent that reported no
    surface was not offered "nothing": its calls are `unjoined_calls` (no surface to join them to).
    """
    language = agent.program_language
    via = _calls_behind_tools(agent)
    keyed = tool_keyed(agent)
    # the api calls on their own names: for a tool-keyed agent, only what bridged no tool
    api_calls = {op: n for op, n in calls_once(agent).items() if op in agent.api_calls} if keyed else agent.api_calls
    tools = [{"name": str(name), "calls": agent.tool_calls.get(str(name), 0), "ending": str(name) in ENDING_TOOLS,
              "via": via.get(str(name), [])}
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
                              "spelling": function_spelling(api, fn, language),
                              "calls": api_calls.get(op, None if keyed else 0)})
        catalogue_module = MODULES_BY_ID.get(module)
        apis.append({"module": module, "path": str(api.get("path") or ""),
                     "brief": str(api.get("description") or (catalogue_module.brief if catalogue_module else "")),
                     "functions": functions})
    offered_tools = {t["name"] for t in tools}
    # An older surface offering tools and no apis: a call joined to an offered tool behind it is that
    # tool's (gg's pre-operation join), not a call outside the surface.
    joined = {call for call, behind in agent.api_tools.items() if set(behind) & offered_tools} if not agent.apis else set()
    outside = (
        [{"name": call_spelling(agent, op), "operation": op, "calls": n}
         for op, n in sorted(api_calls.items()) if op not in offered_ops and op not in joined]
        + [{"name": name, "operation": "", "calls": n}
           for name, n in sorted(agent.tool_calls.items()) if name not in offered_tools]
    )
    reported = agent.surface_reported
    return {"reported": reported, "mode": agent.execution_mode, "language": language, "tool_keyed": keyed,
            "doc_view_types": agent.doc_view_types, "tools": tools, "apis": apis,
            "withheld": [str(t) for t in agent.withheld],
            "unoffered_calls": outside if reported else [], "unjoined_calls": [] if reported else outside}


def _calls_behind_tools(agent: Agent) -> dict:
    """{tool: [{call, calls}]}: the api calls ({object, function} or operation) whose brackets held
    that tool, most first — a legacy program's calls attributed to the tools behind them, the way
    gg's pre-operation console read them (stream.md §10, console.md §1.4)."""
    out = {}
    for call, behind in (agent.api_tools or {}).items():
        for tool, n in (behind or {}).items():
            out.setdefault(str(tool), []).append({"call": str(call), "calls": n})
    return {tool: sorted(rows, key=lambda r: (-r["calls"], r["call"])) for tool, rows in out.items()}


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


def agent_context_bands(run: Run, agent: Agent) -> dict:
    """The agent's context bands per turn (its latest CONTEXT_TURNS_SHOWN context_breakdowns),
    for the stacked chart: {turns: [{turn, total, window, bands: [(source, tokens)]}], bands, peak,
    compactions (runs.pages.material.compactions, over those turns), fullness (its latest)}."""
    rows = list(Event.objects.filter(run=run, type="context_breakdown", agent_id=agent.agent_id)
                .order_by("-seq").values_list("turn", "raw", "seq")[:CONTEXT_TURNS_SHOWN + 1])
    more = len(rows) > CONTEXT_TURNS_SHOWN
    turns, seen_bands = [], set()
    for turn, raw, _ in reversed(rows[:CONTEXT_TURNS_SHOWN]):
        rec = gg_record(raw)
        bands = breakdown_bands(rec)
        seen_bands.update(k for k, v in bands.items() if v)
        total = rec.get("totalTokens") if isinstance(rec.get("totalTokens"), (int, float)) else sum(bands.values())
        window = rec.get("windowLimit") if isinstance(rec.get("windowLimit"), (int, float)) else None
        turns.append({"turn": turn, "total": total, "window": window, "bands": bands})
    order = [b for b in CONTEXT_BANDS if b in seen_bands] + sorted(seen_bands - set(CONTEXT_BANDS))
    peak = max([t["total"] for t in turns] + [1])
    for t in turns:
        t["bands"] = [(b, t["bands"].get(b, 0)) for b in order if t["bands"].get(b, 0)]
    before = rows[CONTEXT_TURNS_SHOWN][2] if more else None  # the breakdown before the first turn shown
    return {"turns": turns, "bands": order, "peak": peak, "more": more,
            "compactions": material.compactions(run, agent, before, CONTEXT_TURNS_SHOWN) if turns else [],
            "fullness": material.fullness(agent.last_breakdown)}
