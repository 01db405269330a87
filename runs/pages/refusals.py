"""The Refusals tab (templates/runs/refusals.html): calls refused before they ran, per agent and
call (design.md "Refusal roster"), read off the roster the fold keeps (runs.ingest.fold_refusals):
its groups with their figures, each group's first calls and the next ones a page at a time.
Tests: tests/pages/test_refusals.py, tests/pages/test_report.py.
"""

from __future__ import annotations

from collections import defaultdict

from django.db import connection
from django.db.models import Count, Sum
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Agent, RefusalGroup, RefusalRow, Run
from runs.pages.common import call_spelling, run_agents, run_context

GROUP_ROWS_SHOWN = 5  # each row is three links: a group lists its first rows, the next ones a page at a time
PAGE_ROWS = 20  # a page of a group's next rows (`refusal_entries`)
CAPPED_SHOWN = 100  # gg's cap counts listed (the figures count them all)
_UNION = 200  # groups whose first rows one statement reads
ENTRY_COLUMNS = ("seq", "kind", "partner", "turn", "operation", "written", "failure", "message", "suppressed")


@require_GET
def refusals_page(request, pk):
    run = run_or_404(pk)
    agents = run_agents(run)
    return render(request, "runs/refusals.html", run_context(
        run, "refusals", agents, refusals=run_refusals(run, agents)))


@require_GET
def refusal_entries(request, pk):
    """A group's next refused calls after the seq `after` (keyset): rows for its table."""
    run = run_or_404(pk)
    agent = Agent.objects.filter(run=run, agent_id=request.GET.get("agent", "")).first()
    try:
        after = int(request.GET.get("after", ""))
    except ValueError:
        raise Http404("after= takes a seq.")
    key = request.GET.get("key", "")
    if agent is None or not RefusalGroup.objects.filter(run=run, agent_id=agent.agent_id, key=key).exists():
        raise Http404("No such refused call.")
    rows = list(_entries(run, agent.agent_id, key).filter(seq__gt=after)[:PAGE_ROWS + 1])
    shown = _spelled(agent, [_entry(r) for r in rows[:PAGE_ROWS]], {})
    return render(request, "runs/refusal_entries.html", {
        "run": run, "agent": agent, "key": key, "shown": shown,
        "after": rows[PAGE_ROWS - 1][0] if len(rows) > PAGE_ROWS else None})


def run_refusal_groups(run: Run) -> list[RefusalGroup]:
    """The roster's groups, the most refused first: what the page, the report and the run's facts read."""
    return sorted(RefusalGroup.objects.filter(run=run), key=lambda g: (-g.count, g.first_seq))


def refusal_counts(groups: list[RefusalGroup]) -> dict:
    """{agent id: {operation, or the name gg's line quotes: n}} (the run's facts' figure)."""
    out = {}
    for g in groups:
        out.setdefault(g.agent_id, {})[g.key] = g.count
    return out


def _entries(run: Run, agent_id: str, key: str):
    return (RefusalRow.objects.filter(run=run, agent_id=agent_id, key=key, entry=True)
            .order_by("seq").values_list(*ENTRY_COLUMNS))


def _entry(row) -> dict:
    seq, kind, partner, turn, operation, written, failure, message, _ = row
    # The record a call links to is its failed result (a line's partner), else gg's line.
    shown = partner if kind == RefusalRow.LINE and partner is not None else seq
    return {"seq": shown, "after": seq, "turn": turn, "operation": operation, "written": written,
            "failure": failure, "message": message}


def _first_rows(run: Run, groups: list[RefusalGroup]) -> tuple[dict, list]:
    """((agent, key) -> its first GROUP_ROWS_SHOWN entries, the first CAPPED_SHOWN + 1 of gg's cap
    counts as (agent, turn, n)): one statement per _UNION groups, each part a range of an index."""
    capped = RefusalRow.objects.filter(run=run, kind=RefusalRow.CAPPED).order_by("seq")
    parts = [capped.values_list("agent_id", "key", *ENTRY_COLUMNS)[:CAPPED_SHOWN + 1]]
    parts += [_entries(run, g.agent_id, g.key).values_list("agent_id", "key", *ENTRY_COLUMNS)[:GROUP_ROWS_SHOWN]
              for g in groups]
    out, capped_rows = defaultdict(list), []
    for i in range(0, len(parts), _UNION):
        # Each part sliced in a subquery of its own: the ORM slices no part of a UNION on SQLite.
        sqls = [part.query.sql_with_params() for part in parts[i:i + _UNION]]
        with connection.cursor() as cursor:
            cursor.execute(" UNION ALL ".join(f"SELECT * FROM ({sql}) AS g{n}" for n, (sql, _) in enumerate(sqls)),
                           [p for _, params in sqls for p in params])
            for agent_id, key, *row in cursor.fetchall():
                if row[1] == RefusalRow.CAPPED:
                    capped_rows.append((row[0], agent_id, row[3], row[-1]))
                else:
                    out[(agent_id, key)].append(_entry(row))
    for rows in out.values():
        rows.sort(key=lambda e: e["after"])
    return out, [r[1:] for r in sorted(capped_rows)]


def _spelled(agent: Agent, entries: list[dict], spellings: dict) -> list[dict]:
    """`entries` with their spelling (`spellings`: operation -> this agent's, spelled once)."""
    for e in entries:
        e["spelling"] = _spelling(agent, e["operation"], e["written"], spellings)
    return entries


def _spelling(agent: Agent, operation: str, written: str, spellings: dict) -> str:
    """A call as the roster shows it. The surface has no spelling for an operation it does not
    offer: gg's line quotes the program's own, which is a fact rather than a guess."""
    if operation and operation not in spellings:
        spellings[operation] = call_spelling(agent, operation)
    spelled = spellings[operation] if operation else ""
    return written if written and (not spelled or spelled == operation) else spelled


def _capped(run: Run, rows: list) -> tuple[dict, dict]:
    """(agent -> {turn: n} of the first CAPPED_SHOWN of gg's cap counts, agent -> (n suppressed,
    turns capped)); the figures are summed in SQL only past the rows listed."""
    listed = defaultdict(dict)
    for agent_id, turn, n in rows[:CAPPED_SHOWN]:
        listed[agent_id][turn] = listed[agent_id].get(turn, 0) + n
    if len(rows) <= CAPPED_SHOWN:
        return listed, {a: (sum(turns.values()), len(turns)) for a, turns in listed.items()}
    capped = RefusalRow.objects.filter(run=run, kind=RefusalRow.CAPPED)
    totals = {a: (n, turns) for a, n, turns in capped.values("agent_id").annotate(
        n=Sum("suppressed"), turns=Count("turn", distinct=True)).values_list("agent_id", "n", "turns")}
    return listed, totals


def run_refusals(run: Run, agents: list[Agent]) -> dict:
    """Per agent, each call refused before it ran grouped by the call (its operation, else the name
    gg's line quotes), with the counts gg's cap suppressed per turn; totals per operation across the
    run. The figures are the fold's running counts and each group reads its first GROUP_ROWS_SHOWN
    calls, so the page reads the same few rows whatever the run's size."""
    groups = run_refusal_groups(run)
    first, capped_rows = _first_rows(run, groups)
    listed, capped = _capped(run, capped_rows)
    mine = defaultdict(list)
    for g in groups:
        mine[g.agent_id].append(g)
    roster, totals = [], {}
    for agent in agents:
        suppressed, capped_turns = capped.get(agent.agent_id, (0, 0))
        if not mine.get(agent.agent_id) and not suppressed:
            continue
        spellings, out = {}, []
        for g in mine.get(agent.agent_id, ()):
            shown = _spelled(agent, first.get((agent.agent_id, g.key), []), spellings)
            spelling = _spelling(agent, g.operation, g.written, spellings)
            message = min(g.messages, key=lambda m: (-g.messages[m][0], g.messages[m][1]), default="")
            out.append({"key": g.key, "operation": g.operation, "spelling": spelling, "count": g.count,
                        "first_turn": g.first_turn, "last_turn": g.last_turn, "message": message,
                        "other_messages": max(len(g.messages) - 1, 0),
                        "failures": sorted(((f or "—", n) for f, n in g.failures.items()), key=lambda fn: -fn[1]),
                        "shown": shown, "hidden": g.count - len(shown),
                        "after": shown[-1]["after"] if shown and g.count > len(shown) else None})
            totals[g.operation or spelling] = totals.get(g.operation or spelling, 0) + g.count
        turns = sorted(listed.get(agent.agent_id, {}).items(), key=lambda tn: tn[0] or 0)
        roster.append({"agent": agent, "groups": out, "capped": turns, "capped_hidden": capped_turns - len(turns),
                       "refused": sum(g["count"] for g in out), "suppressed": suppressed})
    return {"agents": roster, "totals": sorted(totals.items(), key=lambda kv: -kv[1]),
            "refused": sum(totals.values()), "suppressed": sum(r["suppressed"] for r in roster)}
