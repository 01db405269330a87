"""The Refusals tab (templates/runs/refusals.html): calls refused before they ran, per agent and
turn (design.md "Refusal roster"). Tests: tests/pages/test_refusals.py, tests/pages/test_report.py.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.stream.record import as_list
from runs.models import Agent, RefusalRow, Run
from runs.pages.common import call_spelling, function_spelling, get_run, run_agents, run_context
from surfaces.arms import ARMS, spell
from surfaces.catalogue import OPERATIONS

# A bounded window over the log: the roster reads at most this many failed calls and refusal lines.
REFUSALS_READ = 5000
# A group lists its first rows; the rest are counted (the counts and messages above them cover all).
GROUP_ROWS_SHOWN = 20  # each row is three links: a big roster renders its first rows, the rest counted
REFUSED_LINE = re.compile(r"the program's `(?P<name>[^`]+)` call was refused before it ran:\s*(?P<message>.*)", re.S)
SUPPRESSED_LINE = re.compile(r"(?P<n>\d+) further refused call\(s\) were not recorded")


@require_GET
def refusals_page(request, pk):
    run = get_run(pk)
    return render(request, "runs/refusals.html", run_context(
        run, "refusals", refusals=run_refusals(run, run_agents(run))))


@functools.cache
def _catalogue_names(language: str) -> dict[str, str]:
    """The catalogue's operations by id and (in an arm) by the arm's spelling: the same for every
    agent of a language, spelled once per process."""
    names = {op.id: op.id for op in OPERATIONS}
    if language in ARMS:
        names.update({spell(language, op.id): op.id for op in OPERATIONS})
    return names


def _names_to_operations(agent: Agent) -> dict[str, str]:
    """Every way this agent could have written an operation -> the operation (for gg's log lines)."""
    names = dict(_catalogue_names(agent.program_language))
    for api in agent.apis:
        if isinstance(api, dict):
            for fn in as_list(api.get("functions")):
                if isinstance(fn, dict) and fn.get("operation") and isinstance(fn["operation"], str):
                    names.setdefault(function_spelling(api, fn, agent.program_language), fn["operation"])
                    names.setdefault(str(fn.get("name")), fn["operation"])
    return names


def refusal_rows(rows, limit=None) -> tuple[list, list]:
    """The failed results ``(seq, agent_id, turn, operation, failure)`` and the lines ``(seq, agent_id,
    turn, message)`` of a RefusalRow queryset, in seq order (the first `limit` of each)."""
    rows = rows.order_by("seq")
    if limit is None:  # one query
        failed, lines = [], []
        for seq, kind, agent_id, turn, operation, failure, message in rows.values_list(
                "seq", "kind", "agent_id", "turn", "operation", "failure", "message"):
            if kind == RefusalRow.FAILED:
                failed.append((seq, agent_id, turn, operation, failure))
            else:
                lines.append((seq, agent_id, turn, message))
        return failed, lines
    failed = rows.filter(kind=RefusalRow.FAILED).values_list("seq", "agent_id", "turn", "operation", "failure")
    lines = rows.filter(kind=RefusalRow.LINE).values_list("seq", "agent_id", "turn", "message")
    return list(failed[:limit]), list(lines[:limit])


def _entries(failed, lines, agents: list[Agent]):
    """(agent -> [entry], agent -> {turn: suppressed}): each line matched to a failed result of its
    agent's turn naming the same operation, and the unmatched results that failed `unavailable`.
    Only rows of one (agent, turn) ever meet."""
    by_id = {a.agent_id: a for a in agents}
    results = defaultdict(list)  # (agent, turn) -> [[seq, operation, failure, matched]]
    for seq, agent_id, turn, operation, failure in failed:
        results[(agent_id, turn)].append([seq, operation, failure, False])
    entries = defaultdict(list)  # agent -> [entry]
    suppressed = defaultdict(Counter)  # agent -> {turn: n}
    names = {}
    for seq, agent_id, turn, message in lines:
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
    return entries, suppressed


def refusal_counts(failed, lines, agents: list[Agent]) -> dict:
    """{agent id: {operation, or the name gg's line quotes: n}} as the roster counts them, for the
    agents with a refusal or a suppressed count among `failed` and `lines` (the facts' figure)."""
    entries, suppressed = _entries(failed, lines, agents)
    out = {}
    for agent in agents:
        mine = entries.get(agent.agent_id, ())
        if not mine and not suppressed.get(agent.agent_id):
            continue
        ops = out.setdefault(agent.agent_id, {})
        for e in mine:
            key = e["operation"] or e["written"]
            ops[key] = ops.get(key, 0) + 1
    return out


def run_refusals(run: Run, agents: list[Agent]) -> dict:
    """Per agent, per turn, each call refused before it ran, with the counts gg's cap suppressed.

    A refusal is a failed api_result gg's "refused before it ran" line names (any class), or one
    that failed `unavailable`; the line gives the message, the result the class. A line with no
    result beside it (older streams) still counts. Totals per operation across the run.
    """
    failed, lines = refusal_rows(RefusalRow.objects.filter(run=run), REFUSALS_READ)
    truncated = len(failed) == REFUSALS_READ or len(lines) == REFUSALS_READ
    entries, suppressed = _entries(failed, lines, agents)
    roster, totals = [], Counter()
    for agent in agents:
        mine = sorted(entries.get(agent.agent_id, ()), key=lambda e: e["seq"])
        capped = suppressed.get(agent.agent_id, Counter())
        if not mine and not capped:
            continue
        turns = defaultdict(lambda: {"entries": [], "suppressed": 0})
        spellings = {}  # operation -> this agent's spelling of it, spelled once
        for e in mine:
            op = e["operation"]
            if op and op not in spellings:
                spellings[op] = call_spelling(agent, op)
            spelled = spellings[op] if op else ""
            # The surface has no spelling for an operation it does not offer: gg's line quotes the
            # program's own, which is a fact rather than a guess.
            e["spelling"] = e["written"] if e["written"] and (not spelled or spelled == e["operation"]) else spelled
            turns[e["turn"]]["entries"].append(e)
            totals[e["operation"] or e["spelling"]] += 1
        for turn, n in capped.items():
            turns[turn]["suppressed"] += n
        roster.append({"agent": agent, "turns": [{"turn": t, **turns[t]} for t in sorted(turns, key=lambda t: t or 0)],
                       "groups": _by_operation(mine), "capped": sorted(capped.items(), key=lambda tn: tn[0] or 0),
                       "refused": len(mine), "suppressed": sum(capped.values())})
    return {"agents": roster, "totals": totals.most_common(), "refused": sum(totals.values()),
            "suppressed": sum(r["suppressed"] for r in roster), "truncated": truncated, "window": REFUSALS_READ}


def _by_operation(entries: list[dict]) -> list[dict]:
    """One agent's refusals grouped by the call refused, the most refused first: how many, in which
    turns, with which failure classes and messages — what a big run's roster reads as at a glance."""
    groups = {}
    for e in entries:
        key = e["operation"] or e["spelling"]
        g = groups.setdefault(key, {"operation": e["operation"], "spelling": e["spelling"], "entries": [],
                                    "failures": Counter(), "messages": Counter()})
        g["entries"].append(e)
        g["failures"][e["failure"] or "—"] += 1
        g["messages"][e["message"]] += 1
    out = []
    for g in sorted(groups.values(), key=lambda g: -len(g["entries"])):
        turns = [e["turn"] for e in g["entries"] if e["turn"] is not None]
        out.append({**g, "count": len(g["entries"]), "first_turn": min(turns, default=None),
                    "last_turn": max(turns, default=None), "failures": g["failures"].most_common(),
                    "messages": g["messages"].most_common(), "shown": g["entries"][:GROUP_ROWS_SHOWN],
                    "hidden": max(0, len(g["entries"]) - GROUP_ROWS_SHOWN)})
    return out
