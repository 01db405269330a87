"""The Refusals tab (templates/runs/refusals.html): calls refused before they ran, per agent and
call (design.md "Refusal roster"), read off the roster the fold keeps (runs.ingest.fold_refusals):
its groups with their figures, each group's first calls and the next ones a page at a time, the
agents that refused a page at a time and searched across the run.
Tests: tests/pages/test_refusals.py, tests/pages/test_report.py.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from django.db import connection
from django.db.models import Count, Min, Sum
from django.http import Http404
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Agent, RefusalGroup, RefusalRow, Run
from runs.pages.common import call_spelling, paged, run_context

REFUSING_SHOWN = 100  # agents a page of the roster lists (`?agents=N`); the figures count them all
GROUP_ROWS_SHOWN = 5  # each row is three links: a group lists its first rows, the next ones a page at a time
PAGE_ROWS = 20  # a page of a group's next rows (`refusal_entries`)
CAPPED_SHOWN = 100  # gg's cap counts listed (the figures count them all)
_UNION = 200  # groups whose first rows one statement reads
_AGENT, _KEY = "\x00agent", "\x00key"  # stand-ins for a group's agent and key in its compiled statement
ENTRY_COLUMNS = ("seq", "kind", "partner", "turn", "operation", "written", "failure", "message", "suppressed")


@require_GET
def refusals_page(request, pk):
    run = run_or_404(pk)
    return render(request, "runs/refusals.html", run_context(
        run, "refusals", refusals=roster_page(run, request.GET.get("q", ""), request.GET.get("agents"))))


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


def run_refusal_groups(run: Run, agent_ids=None) -> list[RefusalGroup]:
    """The roster's groups (of `agent_ids` only, when given), the most refused first: what the page, the
    report and the run's facts read."""
    groups = RefusalGroup.objects.filter(run=run)
    if agent_ids is not None:
        groups = groups.filter(agent_id__in=agent_ids)
    return sorted(groups, key=lambda g: (-g.count, g.first_seq))


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


def _first_rows(run: Run, groups: list[RefusalGroup], agent_ids: list | None) -> tuple[dict, list]:
    """((agent, key) -> its first GROUP_ROWS_SHOWN entries, the first CAPPED_SHOWN + 1 of gg's cap
    counts (of `agent_ids`, else the run's) as (agent, turn, n)): one statement per _UNION groups,
    each part a range of an index."""
    capped = RefusalRow.objects.filter(run=run, kind=RefusalRow.CAPPED).order_by("seq")
    if agent_ids is not None:
        capped = capped.filter(agent_id__in=agent_ids)
    parts = [capped.values_list("agent_id", "key", *ENTRY_COLUMNS)[:CAPPED_SHOWN + 1].query.sql_with_params()]
    # Every group's part is one statement with its own agent and key: compiled once (compiling it
    # per group was 1.2 of the 2.1 s a roster of 1,845 groups cost), its two placeholders filled in.
    sql, params = (_entries(run, _AGENT, _KEY).values_list("agent_id", "key", *ENTRY_COLUMNS)[:GROUP_ROWS_SHOWN]
                   .query.sql_with_params())
    parts += [(sql, [{_AGENT: g.agent_id, _KEY: g.key}.get(p, p) if isinstance(p, str) else p for p in params])
              for g in groups]
    out, capped_rows = defaultdict(list), []
    for i in range(0, len(parts), _UNION):
        # Each part sliced in a subquery of its own: the ORM slices no part of a UNION on SQLite.
        sqls = parts[i:i + _UNION]
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


def _listed_capped(rows: list) -> dict:
    """agent -> {turn: n} of the first CAPPED_SHOWN of gg's cap counts read."""
    listed = defaultdict(dict)
    for agent_id, turn, n in rows[:CAPPED_SHOWN]:
        listed[agent_id][turn] = listed[agent_id].get(turn, 0) + n
    return listed


def _capped_totals(run: Run) -> dict:
    """agent -> (n suppressed by gg's cap, turns capped, its first cap count's seq), across the run."""
    capped = RefusalRow.objects.filter(run=run, kind=RefusalRow.CAPPED)
    return {a: rest for a, *rest in capped.values("agent_id").annotate(
        n=Sum("suppressed"), turns=Count("turn", distinct=True), first=Min("seq")).values_list(
        "agent_id", "n", "turns", "first")}


def _squashed(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def _matches(q: str, g: RefusalGroup) -> bool:
    """`q` in the group's texts, or naming its call in any arm's spelling (gg.files.read_file,
    gg::files::read_file, files.readFile: the operation's letters, gg's prefix aside)."""
    call = _squashed(q).removeprefix("gg")
    return (any(q in text.lower() for text in (g.agent_id, g.operation, g.written, *g.failures, *g.messages))
            or bool(call) and call in _squashed(g.operation))


def roster_page(run: Run, q: str, first) -> dict:
    """The tab's roster: the agents that refused (with `q`, the groups that name it in their agent,
    call, failures or messages, and the agents whose id holds it) in the order they first did,
    REFUSING_SHOWN at a time from the index `first`; the figures across the run. Reads the agents
    it lists."""
    q = q.strip()[:200]
    groups, capped = run_refusal_groups(run), _capped_totals(run)
    kept = [g for g in groups if _matches(q.lower(), g)] if q else groups
    since = {a: seq for a, (_, _, seq) in capped.items() if q.lower() in a.lower()}
    for g in kept:
        since[g.agent_id] = min(since.get(g.agent_id, g.first_seq), g.first_seq)
    order = sorted(since, key=since.get)
    shown, pages = paged(order, first, REFUSING_SHOWN)
    by_id = {a.agent_id: a for a in run.agents.defer("material").filter(agent_id__in=shown)}
    agents = [by_id[a] for a in shown if a in by_id]
    return {**_figures(groups, capped), "q": q, "keep": f"{urlencode({'q': q})}&" if q else "", "pages": pages,
            "matched": len(order),
            "agents": _roster(run, agents, kept, capped, shown if pages or q else None)}


def run_refusals(run: Run, agents: list[Agent], *, whole_run: bool = True) -> dict:
    """The roster of `agents` (the report's: the whole run's; `whole_run=False`: a few of its agents,
    each listing its own first cap counts), with the run's figures."""
    groups, capped = run_refusal_groups(run), _capped_totals(run)
    agent_ids = None if whole_run else [a.agent_id for a in agents]
    return {**_figures(groups, capped), "agents": _roster(run, agents, groups, capped, agent_ids)}


def refusal_totals(run: Run) -> list:
    """[(operation, refused)] across the run, most first: run_refusals' totals without its roster or caps."""
    return _figures(run_refusal_groups(run), {})["totals"]


def _figures(groups: list[RefusalGroup], capped: dict) -> dict:
    """Refused calls per operation (else the name gg's line quotes) across the run, their sum and
    the calls gg's cap suppressed."""
    totals = Counter()
    for g in groups:
        totals[g.operation or g.written] += g.count
    return {"totals": totals.most_common(), "refused": sum(totals.values()),
            "suppressed": sum(n for n, _, _ in capped.values())}


def _roster(run: Run, agents: list[Agent], groups: list[RefusalGroup], capped: dict, agent_ids) -> list[dict]:
    """Per agent of `agents` that refused, its `groups` (each call refused before it ran grouped by
    the call: its operation, else the name gg's line quotes), with the counts gg's cap suppressed per
    turn (of `agent_ids`' cap counts, else the run's). The figures are the fold's running counts and
    each group reads its first GROUP_ROWS_SHOWN calls, so the page reads the same few rows whatever
    the run's size."""
    if not agents:
        return []
    mine = defaultdict(list)
    for g in groups:
        mine[g.agent_id].append(g)
    ids = {a.agent_id for a in agents}
    first, capped_rows = _first_rows(run, [g for g in groups if g.agent_id in ids], agent_ids)
    listed = _listed_capped(capped_rows)
    roster = []
    for agent in agents:
        suppressed, capped_turns, _ = capped.get(agent.agent_id, (0, 0, None))
        if not mine.get(agent.agent_id) and not suppressed:
            continue
        spellings, out = {}, []
        for g in mine.get(agent.agent_id, ()):
            shown = _spelled(agent, first.get((agent.agent_id, g.key), []), spellings)
            message = min(g.messages, key=lambda m: (-g.messages[m][0], g.messages[m][1]), default="")
            out.append({"key": g.key, "operation": g.operation, "count": g.count,
                        "spelling": _spelling(agent, g.operation, g.written, spellings),
                        "first_turn": g.first_turn, "last_turn": g.last_turn, "message": message,
                        "other_messages": max(len(g.messages) - 1, 0),
                        "failures": sorted(((f or "—", n) for f, n in g.failures.items()), key=lambda fn: -fn[1]),
                        "shown": shown, "hidden": g.count - len(shown),
                        "after": shown[-1]["after"] if shown and g.count > len(shown) else None})
        turns = sorted(listed.get(agent.agent_id, {}).items(), key=lambda tn: tn[0] or 0)
        roster.append({"agent": agent, "groups": out, "capped": turns, "capped_hidden": capped_turns - len(turns),
                       "refused": sum(g["count"] for g in out), "suppressed": suppressed})
    return roster
