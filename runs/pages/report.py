"""The run report: one JSON document holding what the run pages show.

Built from the same selectors as the pages (each tab's module in `runs.pages`), so
`manage.py report RUN --json`, `GET /api/runs/<run>/report` and the pages cannot disagree.
The shape is documented in the README ("Run report").
"""

from __future__ import annotations

from collections import defaultdict

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.views.decorators.http import require_GET

from runs.access import readable_run
from runs.models import Agent, Run
from runs.pages import calls, run_selectors
from runs.pages.agents import agent_forest, agent_surface_counts
from runs.pages.arms import arms_comparison
from runs.pages.common import error_record, error_types_flat, run_agents, run_holdings
from runs.pages.divergences import run_divergences
from runs.pages.machines import run_machines
from runs.pages.overview import run_clocks
from runs.pages.refusals import run_refusals
from runs.pages.store import first_revisions
from runs.pages.stores import kind_overview, store_index, stores_by_kind

REPORT_VERSION = 1
# A memory store's revisions the report lists (oldest first; `revisionCount` counts them all): a memory
# rewritten every turn of a long run has thousands, which its store page reads a page at a time.
REVISIONS_LISTED = 20


@login_not_required
@require_GET
def api_report(request, run):
    """GET /api/runs/<run>/report: the run report for a logged-in user or a token."""
    found, refused = readable_run(request, run)
    if refused:
        return refused
    return JsonResponse(build_report(found), json_dumps_params={"ensure_ascii": False})


def _iso(value):
    return value.isoformat() if value else None


def _holding(h) -> dict:
    return {"kind": h.kind, "moduleId": h.module_id, "enabled": h.enabled, "origin": h.origin,
            "writable": h.writable, "scope": h.scope or None, "ownership": h.ownership or None}


def _errors(holder) -> dict:
    """gg's Errors widget: the types ranked with its labels and base kinds, the longest failing
    streak (a peak over agents) and the loop aborts."""
    record = error_record(holder)
    return {"topTypes": record["ranked"], "maxConsecutive": record["max_consecutive"],
            "loopAborts": record["loop_aborts"], "loopAbortWords": record["loop_abort_words"],
            "loopAbortChars": record["loop_abort_chars"]}


def surface_doc(agent) -> dict:
    """The agent's surface as its document says it."""
    surface = agent_surface_counts(agent)
    return {
        "reported": surface["reported"],
        "tools": [{"name": t["name"], "calls": t["calls"], **({"via": t["via"]} if t["via"] else {})}
                  for t in surface["tools"]],
        "apis": [{"module": a["module"], "path": a["path"], "functions": a["functions"]} for a in surface["apis"]],
        "withheld": surface["withheld"],
        "unofferedCalls": surface["unoffered_calls"],
        "callsWithoutSurface": surface["unjoined_calls"],
    }


def _module_overview(kind: str, stores) -> dict:
    """gg's per-kind Modules overview, as the Stores tab leads each kind with it."""
    o = kind_overview(stores)
    return {"kind": kind, "stores": o["stores"], "holders": o["holders"], "liveHolders": o["live"],
            "shared": o["shared"], "costPerTurn": o["cost"], "neverWritten": o["unwritten"]}


def _machine(m) -> dict:
    """A machine as the Overview shows it: its latest instances' latest steps (every step is an agent's
    `fsmState`, chained by `predecessor`)."""
    def step(s):
        return {"state": s["fsm_state"], "agentId": s["agent_id"]}

    return {"fsmId": m["id"] or None, "name": m["name"] or None, "declared": m["declared"],
            "states": [{"name": s["name"], "agent": s["agent"] or None, "to": s["to"], "declared": s["declared"],
                        "terminal": s["terminal"], "entries": s["entries"], "standing": s["standing"],
                        "ended": s["ended"]} for s in m["states"]],
            "instances": m["instance_count"],
            "latest": [{"issueId": i["first"]["issue_id"] or None, "earlier": i["earlier"],
                        "path": [step(s) for s in i["steps"]], "now": {**step(i["now"]), "status": i["now"]["status"]}}
                       for i in m["instances"]]}


def _revision(r) -> dict:
    return {"seq": r.seq, "turn": r.turn, "agentId": r.agent_id or None, "memory": r.name, "revision": r.revision,
            "change": r.change or None, "description": r.description or None, "chars": r.length, "lines": r.lines,
            "bodyHead": r.body_head}


def _memory(view, revisions: dict) -> dict:
    """A memory store's peak usage and revision history (its store page's figures)."""
    if view.kind != "memories":
        return {}
    return {"peak": view.store.peak, "revisionCount": view.revisions,
            "revisions": [_revision(r) for r in revisions.get(view.module_id, ())]}


def agent_docs(run: Run, agent_ids: list[str] | None, *, timing: bool = True) -> list[dict]:
    """The report's documents of the run's agents of `agent_ids` alone, reading only theirs (what a
    comparison of two agents or a page of pairs needs, where the whole report reads every agent and store
    of the run); each of them lists its own first cap counts, where the report lists the run's. None:
    every agent's, in run order, as the report has them."""
    agents = run_agents(run, agent_ids)
    whole = agent_ids is None
    return _agent_docs(agents, run_holdings(run, agents, whole_run=whole),
                       run_refusals(run, agents, whole_run=whole),
                       calls.run_latency(agents) if timing else None, calls.run_throughput(agents) if timing else None)


def _agent_docs(agents: list[Agent], holdings, refusals: dict, latency, throughput) -> list[dict]:
    """Each of `agents`' document, off their roster rows, their refusals' roster and (unless None)
    their latency and throughput tables."""
    names = {a.pk: a.agent_id for a in agents}
    # A predecessor not among them (a few agents' documents) is named by one more query.
    missing = {a.predecessor_id for a in agents} - names.keys() - {None}
    names.update(Agent.objects.filter(pk__in=missing).values_list("pk", "agent_id") if missing else ())
    held = defaultdict(list)
    for h in holdings:
        held[h.agent_id].append(h)
    refused = {r["agent"].agent_id: r for r in refusals["agents"]}
    durations = run_selectors.agent_durations(agents)

    def agent_doc(a) -> dict:
        mine = refused.get(a.agent_id)
        return {
            "agentId": a.agent_id,
            "parentAgentId": a.parent_agent_id or None,
            "predecessor": names.get(a.predecessor_id),
            "transition": a.transition_kind or None,
            "fsmState": a.fsm_state or None,
            "depth": a.depth,
            "profileId": a.profile_id,
            "modelId": a.model_id,
            "executionMode": a.execution_mode or None,
            "programLanguage": a.program_language or None,
            "docViewTypes": a.doc_view_types or None,
            "role": a.role or None,
            "status": a.status,
            "waitingOn": a.waiting_on or None,
            "worktree": a.worktree_outcome or None,
            "turns": a.turns,
            "calls": a.call_count,
            "errorTurns": a.error_turn_count,
            "errorTurnsByKind": a.error_turns,
            "errorTurnsByType": error_types_flat(a.error_types),
            "errors": _errors(a),
            "durationSeconds": durations.get(a.agent_id),
            "suspendedSeconds": a.suspended.total_seconds(),
            "blockedSince": _iso(a.blocked_since),
            "contextBands": a.context_bands,
            "lastContext": a.last_breakdown,
            "apiFailures": a.api_failures,
            "toolFailures": a.tool_failures,
            "holdings": [_holding(h) for h in held.get(a.pk, ())],
            "surface": surface_doc(a),
            # Per call refused, its exact figures; `refusals` lists each group's first entries (the
            # Refusals tab's rows), so the report stays small whatever the run's size.
            "refusalGroups": [{"operation": g["operation"] or None, "spelling": g["spelling"], "refused": g["count"],
                               "firstTurn": g["first_turn"], "lastTurn": g["last_turn"],
                               "failures": {f: n for f, n in g["failures"]}} for g in (mine["groups"] if mine else ())],
            "refusals": [{"turn": e["turn"], "operation": e["operation"] or None, "spelling": e["spelling"],
                          "failure": e["failure"] or None, "message": e["message"] or None}
                         for e in sorted((e for g in (mine["groups"] if mine else ()) for e in g["shown"]),
                                         key=lambda e: e["seq"])],
            "refusalsSuppressed": [{"turn": turn, "count": n} for turn, n in (mine["capped"] if mine else ())],
        } | ({} if latency is None else {
            "latency": calls.latency_doc(latency["agents"].get(a.agent_id, [])),
            "generatedTokensPerSecond": throughput["agents"].get(a.agent_id, {}).get("per_second"),
        })

    return [agent_doc(a) for a in agents]


def build_report(run: Run, *, timing: bool = True) -> dict:
    """The run report; `timing=False` leaves out the latency and tokens-per-second figures (the
    comparison reads neither)."""
    agents = run_agents(run)
    holdings = run_holdings(run, agents)  # each roster row's agent off `agents`, not decoded again
    forest = agent_forest(agents)
    refusals = run_refusals(run, agents)
    header = run_selectors.run_header(run)
    clocks = run_clocks(run, duration=header["duration"])
    latency = calls.run_latency(agents) if timing else None
    throughput = calls.run_throughput(agents) if timing else None
    documents = _agent_docs([row.agent for row in forest], holdings, refusals, latency, throughput)

    stores = store_index(run, agents, holdings)
    revisions = first_revisions(run, REVISIONS_LISTED) if any(s.revisions for s in stores) else {}
    divergences = run_divergences(run, agents, holdings)
    arms = arms_comparison(agents)
    usage = header["usage"]
    return {
        "version": REPORT_VERSION,
        "run": {
            "id": run.pk,
            "name": run.name,
            "source": run.source,
            "status": run.status,
            "live": run.is_live,
            "startedAt": _iso(run.started_at),
            "endedAt": _iso(run.ended_at),
            "durationSeconds": header["duration"].total_seconds() if header["duration"] is not None else None,
            "waitingSeconds": clocks["waiting"].total_seconds(),
            "agentsByStatus": dict(clocks["by_status"]),
            "counts": {"records": run.last_seq, "rejected": run.rejected_count, "agents": run.agent_count,
                       "turns": run.turn_count, "calls": run.call_count, "errorTurns": run.error_turn_count,
                       "divergences": len(divergences), "refused": refusals["refused"],
                       "refusalsSuppressed": refusals["suppressed"]},
            "errorTurnsByKind": run.error_turns,
            "errorTurnsByType": error_types_flat(run.error_types),
            "errors": _errors(run),
            "apiFailures": run.api_failures,
            "toolFailures": run.tool_failures,
            "usage": {"source": usage["source"], "tokens": usage["tokens"], "cost": usage["cost"],
                      "bySlot": usage["by_slot"]},
            "capabilitySet": run.capability_set,
        } | ({} if not timing else {
            # Latency per operation / tool from the stored stamps of each call's two halves (p50 / p95
            # to three significant figures, off the fold's counts), and
            # output tokens over model time pooled across the run (runs.pages.calls).
            "latency": calls.latency_doc(latency["run"]),
            "generatedTokensPerSecond": throughput["run"]["per_second"],
            "generatedTokens": throughput["run"]["tokens"],
            "modelMs": throughput["run"]["ms"],
        }),
        "agents": documents,
        "stores": [{
            "moduleId": s.module_id,
            "kind": s.kind,
            "sharing": s.sharing,
            "holders": [{"agentId": h.agent.agent_id, "origin": h.origin, "writable": h.writable,
                         "scope": h.scope or None, "ownership": h.ownership or None, "costTokens": s.holder_costs[h.agent.agent_id]}
                        for h in s.holders],
            "dropped": s.dropped,
            "releasedBy": s.released_by,
            "lifetime": [{"event": r["event"], "agentId": r["agent"], "fromAgentId": r["from_agent"] or None,
                          "transition": r["transition"] or None, "otherModuleId": r["other"] or None}
                         for r in s.lifetime],
            "contents": s.store.snapshot,
        } | _memory(s, revisions) for s in stores],
        "modules": [_module_overview(kind, group) for kind, group in stores_by_kind(stores)],
        "divergences": divergences,
        "refusalTotals": [{"operation": op, "refused": n} for op, n in refusals["totals"]],
        "machines": [_machine(m) for m in run_machines(run)],
        "arms": [{"arm": arm["label"], "programLanguage": arm["language"] or None, "docViewTypes": arm["doc_view_types"] or None,
                  "executionModes": arm["modes"], "agents": [a.agent_id for a in arm["agents"]],
                  "turns": arm["turns"], "errorTurns": arm["error_turns"], "calls": dict(arm["calls"]),
                  "docsViewTokens": arm["docs_view"], "searchResultsTokens": arm["search_results"]}
                 for arm in arms["arms"]],
    }
