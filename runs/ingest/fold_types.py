"""The fold's handler per gg record type: `HANDLERS[type](projector, seq, record, agent)`.

Each updates the rows the `runs.ingest.fold.Projector` holds (the emitting `agent`, the run, the
stores) and marks what it touched; nothing here queries the database.
"""

from __future__ import annotations

from datetime import timedelta

from runs.models import Agent, MemoryRevision
from runs.stream.profiles import profile_key, profiles
from runs.stream.record import api_operation, worktree_outcome, as_list, as_text, derive_role, failure_class, parse_timestamp, roster_module_id
from runs.stream.usage import add_usage, breakdown_bands, bump, empty_usage, num, total
from runs.stream.vocabulary import (
    DEPTH_COLUMN_MAX, FAILED_SESSION_STATUSES, ID_MAX, OPEN_AGENT_STATUSES, SHORT_MAX, STATE_KINDS, UNCLASSIFIED,
)  # fmt: skip

def _session_started(p, seq, rec, agent):
    if p.run.session_started_seq is None:
        p.run.session_started_seq = seq
    cs = rec.get("capabilitySet")
    if isinstance(cs, dict):
        p.run.capability_set = cs
        first = next(iter(profiles(cs)), None)
        if first is not None and not agent.parent_agent_id:
            # gg gives a root never announced by agent_spawned the configuration's first profile
            _name_unannounced(agent, profile_key(first), first.get("modelId"))


def _session_summary(p, seq, rec, agent):
    summary = rec.get("summary")
    if summary is not None:
        p.run.summary = summary
    slots = [s for s in as_list(summary.get("slotCosts")) if isinstance(s, dict)] if isinstance(summary, dict) else []
    if len(slots) == 1 and not agent.parent_agent_id:  # one slot: the root's own
        profile, model = slots[0].get("profileId") or slots[0].get("slot"), slots[0].get("modelId")
        _name_unannounced(agent, profile, model)
        # and so the spend of usage deltas that named neither (an older stream's) was that slot's
        unnamed = p.run.usage.get("by_slot", {}).pop("|", None)
        if unnamed is not None:
            slot = _usage_slot(p.run, profile, model)
            add_usage(slot, unnamed["tokens"], unnamed["cost"])
            slot["deltas"] += unnamed["deltas"] - 1


def _session_ended(p, seq, rec, agent):
    _close_bracket(agent)
    run = p.run
    status = as_text(rec.get("status"), 32) or "unknown"
    if run.status != status:
        run.status = status
        p.status_changed = True
    ended = parse_timestamp(rec.get("timestamp"))
    if ended is not None:
        run.ended_at = ended
    final = "failed" if status in FAILED_SESSION_STATUSES else "done"
    p.load_all_agents()
    for a in p.agents.values():
        changed = _resume(a, ended)  # open suspensions close (spec/stream.md §7.1)
        if a.status in OPEN_AGENT_STATUSES:
            a.status = final
            changed = True
        if changed:
            p.dirty_agents.add(a.agent_id)


def _turn_started(p, seq, rec, agent):
    agent.turns += 1
    _close_bracket(agent)  # a bracket never spans turns
    p.run.turn_count += 1


def _close_bracket(agent) -> None:
    """What force-closes an agent's api_call bracket in gg's feed (console.md §1.4, step 5)."""
    agent.open_api_calls = 0
    agent.open_api_call = ""


# turn_outcome's loop-abort figures, summed (omitted when 0).
LOOP_ABORT_FIELDS = ("loopAborts", "loopAbortWords", "loopAbortChars")


def _turn_outcome(p, seq, rec, agent):
    _close_bracket(agent)
    streak = _count(rec.get("consecutiveErrors"))
    aborts = [(field, _count(rec.get(field))) for field in LOOP_ABORT_FIELDS]
    for facts in (agent.error_facts, p.run.error_facts):
        if streak and streak > facts.get("maxConsecutive", 0):  # a peak over agents, never a sum
            facts["maxConsecutive"] = streak
        for field, n in aborts:
            if n:
                facts[field] = min(facts.get(field, 0) + n, COUNT_MAX)
    outcome = rec.get("outcome")
    if outcome == "error" or outcome == "fatal":
        kind = rec.get("error")
        kind = as_text(kind, SHORT_MAX) if kind else ("fatal" if outcome == "fatal" else "unknown")
        bump(agent.error_turns, kind)
        agent.error_turn_count += 1
        bump(p.run.error_turns, kind)
        p.run.error_turn_count += 1
        error_type = rec.get("errorType")
        if error_type:  # the specific type, kept under its kind
            error_type = as_text(error_type, SHORT_MAX)
            _bump_type(agent.error_types, kind, error_type)
            _bump_type(p.run.error_types, kind, error_type)


def _context_breakdown(p, seq, rec, agent):
    bands = breakdown_bands(rec)
    for band, tokens in bands.items():
        bump(agent.context_bands, band, tokens)
    reported = num(rec.get("totalTokens"))
    agent.last_breakdown = {
        "bands": bands,
        "totalTokens": reported if reported is not None else total(bands.values()),
        "windowLimit": num(rec.get("windowLimit")),
        "fullness": num(rec.get("fullness")),
    }


def _usage(p, seq, rec, agent):
    tokens, cost = rec.get("tokens"), rec.get("cost")
    run = p.run
    add_usage(run.usage, tokens, cost)
    profile = rec.get("profileId") or rec.get("slot") or agent.profile_id
    model = rec.get("modelId") or agent.model_id
    add_usage(_usage_slot(run, profile, model), tokens, cost)
    add_usage(agent.usage, tokens, cost)
    _name_unannounced(agent, rec.get("profileId") or rec.get("slot"), rec.get("modelId"))


def _slot_usage(p, seq, rec, agent):
    profile = as_text(rec.get("profileId") or rec.get("slot"))
    model = as_text(rec.get("modelId"))
    p.run.slot_usage[f"{profile}|{model}"] = {
        "profileId": profile,
        "modelId": model,
        "tokens": rec.get("tokens"),
        "cost": rec.get("cost"),
    }


def _api_call(p, seq, rec, agent):
    operation = api_operation(rec)
    bump(agent.api_calls, operation)
    agent.open_api_calls += 1
    agent.open_api_call = operation
    p.run.call_count += 1


def _api_result(p, seq, rec, agent):
    if agent.open_api_calls:
        agent.open_api_calls -= 1
    if not agent.open_api_calls:
        agent.open_api_call = ""
    if rec.get("ok") is False:
        cls = failure_class(rec) or UNCLASSIFIED
        bump(agent.api_failures, cls)
        bump(p.run.api_failures, cls)


def _tool_call(p, seq, rec, agent):
    name = as_text(rec.get("name"))
    bump(agent.tool_calls, name)  # gg counts the tool whether or not a bracket holds it
    if agent.open_api_calls:  # legacy: a program call bridged inside its api_call bracket (§10)
        bump(agent.api_tools.setdefault(agent.open_api_call, {}), name)
    else:
        p.run.call_count += 1


def _tool_result(p, seq, rec, agent):
    if rec.get("ok") is False:
        cls = failure_class(rec) or UNCLASSIFIED
        bump(agent.tool_failures, cls)
        bump(p.run.tool_failures, cls)


def _agent_spawned(p, seq, rec, agent):
    profile = rec.get("profileId") or rec.get("slot")
    if profile:
        agent.profile_id = as_text(profile)
    if rec.get("modelId"):
        agent.model_id = as_text(rec["modelId"])
    depth = rec.get("depth")
    if isinstance(depth, int) and not isinstance(depth, bool) and 0 <= depth <= DEPTH_COLUMN_MAX:
        agent.depth = depth
    for field, key in (("cwd", "cwd"), ("brief", "brief")):
        v = rec.get(key)
        if isinstance(v, str):
            setattr(agent, field, v)
    if isinstance(rec.get("worktree"), str):
        agent.worktree = rec["worktree"][:400]


def _agent_status(p, seq, rec, agent):
    status = rec.get("status")
    if not status:
        return
    status = as_text(status, 32)
    at = parse_timestamp(rec.get("timestamp"))
    if status == "blocked":
        if agent.blocked_since is None:  # a repeated `blocked` continues the same suspension
            agent.blocked_since = at
    else:
        _resume(agent, at)
    agent.status = status
    waiting = rec.get("waitingOn") if status == "blocked" else None
    agent.waiting_on = as_text(waiting, 200) if waiting else ""


def _agent_returned(p, seq, rec, agent):
    _resume(agent, parse_timestamp(rec.get("timestamp")))
    agent.waiting_on = ""
    agent.status = "done"
    summary = rec.get("summary")
    agent.returned = summary if isinstance(summary, str) else as_text(summary, 10**6)


def _agent_transition(p, seq, rec, agent):
    _close_bracket(agent)
    to = rec.get("toAgentId")
    if not to:
        return
    to = as_text(to)
    succ = p.agent(to, seq)
    p.dirty_agents.add(to)
    kind = rec.get("kind")
    succ.transition_kind = as_text(kind, 16)
    modules = rec.get("modules")
    succ.transition_modules = modules if isinstance(modules, list) else []
    p.pred_links[to] = agent.agent_id
    profile = rec.get("profileId") or rec.get("agent")
    if profile and not succ.profile_id:
        succ.profile_id = as_text(profile)
    state = rec.get("state")
    if state and not succ.fsm_state:
        succ.fsm_state = as_text(state)


def _worktree_merged(p, seq, rec, agent):
    agent.worktree_outcome = worktree_outcome(rec)


def _fsm_state(p, seq, rec, agent):
    fsm = rec.get("fsmId") or rec.get("fsm") or rec.get("machine")
    if fsm:
        agent.fsm_id = as_text(fsm)
    state = rec.get("state")
    if state is not None:
        agent.fsm_state = as_text(state)
    profile = rec.get("profileId") or rec.get("agent")
    if profile and not agent.profile_id:
        agent.profile_id = as_text(profile)


def _agent_modules(p, seq, rec, agent):
    rows = []
    for position, row in enumerate(as_list(rec.get("modules"))):
        if not isinstance(row, dict):
            continue
        kind = as_text(row.get("kind"), 32)
        enabled = row.get("enabled") is True
        mid = roster_module_id(row, agent.agent_id)
        if enabled and mid:
            p.store(mid, kind, seq)
            if kind == "memories" and not agent.memory_store:
                agent.memory_store = mid
        scope = row.get("scope")
        rows.append(
            {
                "kind": kind,
                "module_id": mid,
                "store": mid if enabled and mid else None,
                "enabled": enabled,
                "origin": as_text(row.get("origin"), 32),
                "writable": row.get("writable") is not False,
                "scope": as_text(scope, 32) if scope else "",
                "ownership": as_text(row.get("ownership"), 16),
                "position": position,
            }
        )
    p.rosters[agent.agent_id] = rows


def _agent_surface(p, seq, rec, agent):
    tools = rec.get("tools")
    apis = rec.get("apis")
    withheld = rec.get("withheld")
    agent.surface_reported = True
    agent.execution_mode = as_text(rec.get("executionMode"), 64)
    agent.tools = tools if isinstance(tools, list) else []
    agent.apis = apis if isinstance(apis, list) else []
    agent.withheld = withheld if isinstance(withheld, list) else []
    agent.program_language = as_text(rec.get("programLanguage"), 32)
    agent.doc_view_types = as_text(rec.get("docViewTypes"), 64)
    agent.role = derive_role(agent.tools, agent.apis)


def _code_execution(p, seq, rec, agent):
    _close_bracket(agent)


def _state_snapshot(p, seq, rec, agent):
    etype = rec.get("type")
    kind = STATE_KINDS[etype]
    mid = rec.get("moduleId")
    mid = as_text(mid) if mid else f"legacy:{agent.agent_id}:{kind}"[:ID_MAX]
    store = p.store(mid, kind, seq)
    store.snapshot_type = etype
    store.snapshot = rec
    store.snapshot_seq = seq
    if etype == "memory_state":
        agent.memory_store = mid
        store.peak = _peak(store.peak, rec)
    if mid not in p.new_stores:
        p.dirty_stores.add(mid)


PEAK_FIGURES = ("count", "totalLen", "totalLines")


def _peak(peak, rec: dict) -> dict:
    """The store's peak with this memory_state: per figure the largest of the peak so far, the
    snapshot's own figure and gg's reported `peak`."""
    reported = rec.get("peak") if isinstance(rec.get("peak"), dict) else {}
    out = dict(peak or {})
    for key in PEAK_FIGURES:
        seen = [n for n in (out.get(key), _count(rec.get(key)), _count(reported.get(key))) if n is not None]
        if seen:
            out[key] = max(seen)
    return out


def _memory_revision(p, seq, rec, agent):
    p.memory_revisions.append(MemoryRevision(
        run=p.run, seq=seq, module_id=agent.memory_store or f"legacy:{agent.agent_id}:memories"[:ID_MAX],
        agent_id=agent.agent_id, turn=agent.turns or None, name=as_text(rec.get("name")),
        revision=_count(rec.get("revision")), change=as_text(rec.get("change"), 32),
        description=rec["description"] if isinstance(rec.get("description"), str) else "",
        length=_count(rec.get("len")), lines=_count(rec.get("lines")),
        body_head=rec["body"][:MemoryRevision.BODY_HEAD] if isinstance(rec.get("body"), str) else ""))


COUNT_MAX = 2**53  # a figure past a double's exact range is held there


def _count(value):
    """A u64 figure of a record as a non-negative int (capped), or None for anything else."""
    n = num(value)
    if n is None or n != n or n < 0:
        return None
    return int(min(n, COUNT_MAX))


def _usage_slot(run, profile, model) -> dict:
    """The run's usage row for (profile, model), begun empty."""
    profile, model = as_text(profile), as_text(model)
    by_slot = run.usage.setdefault("by_slot", {})
    return by_slot.setdefault(f"{profile}|{model}", {"profileId": profile, "modelId": model, **empty_usage()})


def _name_unannounced(agent: Agent, profile, model) -> None:
    """Fill the profile and model an agent_spawned did not give (it overrides them when it comes)."""
    if profile and not agent.profile_id:
        agent.profile_id = as_text(profile)
    if model and not agent.model_id:
        agent.model_id = as_text(model)


def _bump_type(counter: dict, kind: str, error_type: str) -> None:
    bump(counter.setdefault(kind, {}), error_type)


def _resume(agent: Agent, at) -> bool:
    """Close the agent's open suspension at `at` (clamped at 0 for stamps out of order); True if
    one was open. Without a stamp to close it the suspension ends unmeasured."""
    since = agent.blocked_since
    if since is None:
        return False
    if at is not None:
        agent.suspended += max(at - since, timedelta(0))
    agent.blocked_since = None
    return True


HANDLERS = {
    "session_started": _session_started,
    "session_summary": _session_summary,
    "session_ended": _session_ended,
    "turn_started": _turn_started,
    "turn_outcome": _turn_outcome,
    "context_breakdown": _context_breakdown,
    "usage": _usage,
    "slot_usage": _slot_usage,
    "api_call": _api_call,
    "api_result": _api_result,
    "tool_call": _tool_call,
    "tool_result": _tool_result,
    "agent_spawned": _agent_spawned,
    "agent_status": _agent_status,
    "agent_returned": _agent_returned,
    "agent_transition": _agent_transition,
    "fsm_state": _fsm_state,
    "worktree_merged": _worktree_merged,
    "agent_modules": _agent_modules,
    "agent_surface": _agent_surface,
    "code_execution": _code_execution,
    **{t: _state_snapshot for t in STATE_KINDS},
    "memory_revision": _memory_revision,
}
