"""The Refusals tab (templates/runs/refusals.html): calls refused before they ran, per agent and
turn (design.md "Refusal roster"). Tests: tests/pages/test_refusals.py, tests/pages/test_report.py.
"""

from __future__ import annotations

import functools
import re
from collections import Counter, defaultdict

from django.db import connection
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.stream.record import as_list
from runs.models import Agent, RefusalRow, Run
from runs.pages.common import call_spelling, function_spelling, get_run, run_agents, run_context
from surfaces.arms import ARMS, spell
from surfaces.catalogue import OPERATIONS

# The runs list's refusal facts (runs/ingest/facts.py) read at most this many failed calls and refusal
# lines; the roster itself counts them all in SQL (run_refusals).
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


# gg's refused-call line as SQL reads it (REFUSED_LINE): the name between these, the message after.
_REFUSED_HEAD, _REFUSED_TAIL = "the program's `", "` call was refused before it ran:"
_SUPPRESSED_TEXT = "further refused call(s) were not recorded"


def _lines_sql(find: str) -> str:
    """The run's refused-call lines (not gg's suppressed counts) with the name and message split out."""
    head, tail = len(_REFUSED_HEAD), len(_REFUSED_TAIL)
    return f"""
    l0 AS (SELECT seq, agent_id, COALESCE(turn, -1) AS t, turn, message,
                  {find}(message, %s) + {head} AS a FROM {RefusalRow._meta.db_table}
           WHERE run_id = %s AND kind = '{RefusalRow.LINE}' AND message NOT LIKE %s),
    l1 AS (SELECT *, {find}(substr(message, a), %s) - 1 AS w FROM l0 WHERE a > {head}),
    ln AS (SELECT seq, agent_id, t, turn, substr(message, a, w) AS written,
                  trim(substr(message, a + w + {tail})) AS msg FROM l1 WHERE w > 0)"""


def _lines_params(run: Run) -> list:
    return [_REFUSED_HEAD, run.pk, f"%{_SUPPRESSED_TEXT}%", _REFUSED_TAIL]


def _entries_sql(find: str, names: list[tuple[str, str, str]]) -> str:
    """A CTE `e` of the run's roster entries, as `_entries` matches them: the k-th line naming an
    operation in an (agent, turn) takes that turn's k-th failed result of it (its seq and class),
    paired by grouping on k rather than a join; the results no line took that failed `unavailable`
    are entries of their own. `names` maps (agent, written name) to the operation."""
    values = ", ".join(["(%s, %s, %s)"] * len(names)) or None
    names_cte = f"nm(agent_id, written, op) AS (VALUES {values})" if values else \
        "nm(agent_id, written, op) AS (SELECT '', '', '' WHERE 1 = 0)"
    return f"""WITH {names_cte}, {_lines_sql(find)},
    u AS (SELECT ln.seq, ln.agent_id, ln.t, ln.turn, COALESCE(nm.op, '') AS op, ln.written, ln.msg,
                 '' AS failure, 1 AS line
          FROM ln LEFT JOIN nm ON nm.agent_id = ln.agent_id AND nm.written = ln.written
          UNION ALL
          SELECT seq, agent_id, COALESCE(turn, -1), turn, operation, '', '', failure, 0
          FROM {RefusalRow._meta.db_table} WHERE run_id = %s AND kind = '{RefusalRow.FAILED}'),
    r AS (SELECT *, CASE WHEN line = 1 AND op = '' THEN -seq ELSE ROW_NUMBER() OVER (
                 PARTITION BY agent_id, t, op, line ORDER BY seq) END AS k FROM u),
    p AS (SELECT agent_id, MIN(turn) AS turn, op, MAX(line) AS has_line,
                 MAX(CASE WHEN line = 0 THEN seq END) AS fseq, MAX(CASE WHEN line = 1 THEN seq END) AS lseq,
                 MAX(CASE WHEN line = 0 THEN failure END) AS failure,
                 MAX(CASE WHEN line = 1 THEN written END) AS written, MAX(CASE WHEN line = 1 THEN msg END) AS msg
          FROM r GROUP BY agent_id, t, op, k),
    e AS MATERIALIZED (SELECT COALESCE(fseq, lseq) AS seq, agent_id, turn, op AS operation, COALESCE(written, '') AS written,
                 COALESCE(failure, '') AS failure, COALESCE(msg, '') AS message,
                 CASE WHEN op != '' THEN op ELSE COALESCE(written, '') END AS gkey
          FROM p WHERE has_line = 1 OR failure = 'unavailable')"""


def _rows(sql: str, params: list) -> list[tuple]:
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchall()


def run_refusals(run: Run, agents: list[Agent]) -> dict:
    """Per agent, each call refused before it ran grouped by the call, with the counts gg's cap
    suppressed per turn.

    A refusal is a failed api_result gg's "refused before it ran" line names (any class), or one
    that failed `unavailable`; the line gives the message, the result the class. A line with no
    result beside it (older streams) still counts. Totals per operation across the run.
    The figures are SQL aggregates over the run's RefusalRows and each group reads its first
    GROUP_ROWS_SHOWN entries, so the page reads the same few rows whatever the run's size.
    """
    find = "STRPOS" if connection.vendor == "postgresql" else "INSTR"
    by_id = {a.agent_id: a for a in agents}
    names = []  # (agent, written, operation) for the names the run's lines quote
    for agent_id, written in _rows(f"WITH {_lines_sql(find)} SELECT DISTINCT agent_id, written FROM ln",
                                   _lines_params(run)):
        if agent_id in by_id:
            operation = _names_to_operations(by_id[agent_id]).get(written)
            if operation:
                names.append((agent_id, written, operation))
    params = [v for row in names for v in row] + _lines_params(run) + [run.pk]
    # One statement reads e once: each group's failure classes with their figures (f), its top
    # message and how many distinct (m), its first entries (s), as rows of one shape.
    figures = _rows(_entries_sql(find, names) + f""",
    m AS (SELECT agent_id, gkey, message, ROW_NUMBER() OVER (
              PARTITION BY agent_id, gkey ORDER BY COUNT(*) DESC, MIN(seq)) AS r,
          COUNT(*) OVER (PARTITION BY agent_id, gkey) AS d FROM e GROUP BY agent_id, gkey, message),
    s AS (SELECT *, ROW_NUMBER() OVER (PARTITION BY agent_id, gkey ORDER BY seq) AS r FROM e)
    SELECT 'f', agent_id, gkey, failure, CAST(NULL AS TEXT), CAST(NULL AS TEXT), CAST(NULL AS TEXT),
           COUNT(*), MIN(turn), MAX(turn), MIN(seq) FROM e GROUP BY agent_id, gkey, failure
    UNION ALL SELECT 'm', agent_id, gkey, message, NULL, NULL, NULL, d, NULL, NULL, NULL FROM m WHERE r = 1
    UNION ALL SELECT 's', agent_id, gkey, operation, written, failure, message, NULL, turn, NULL, seq
    FROM s WHERE r <= {GROUP_ROWS_SHOWN}""", params)
    groups = {}  # (agent, key) -> group
    for _, agent_id, key, failure, _, _, _, n, first, last, seq in sorted(
            (r for r in figures if r[0] == "f"), key=lambda r: (-r[7], r[10])):
        g = groups.setdefault((agent_id, key), {"count": 0, "first_turn": None, "last_turn": None, "seq": seq,
                                                "failures": [], "shown": []})
        g["count"] += n
        g["failures"].append((failure or "—", n))
        g["seq"] = min(g["seq"], seq)
        if first is not None:
            g["first_turn"] = first if g["first_turn"] is None else min(g["first_turn"], first)
            g["last_turn"] = max(g["last_turn"] or 0, last)
    for _, agent_id, key, message, _, _, _, distinct, _, _, _ in (r for r in figures if r[0] == "m"):
        groups[(agent_id, key)] |= {"message": message, "other_messages": distinct - 1}
    for _, agent_id, key, operation, written, failure, message, _, turn, _, seq in sorted(
            (r for r in figures if r[0] == "s"), key=lambda r: r[10]):
        groups[(agent_id, key)]["shown"].append({"seq": seq, "turn": turn, "operation": operation,
                                                 "written": written, "failure": failure, "message": message})
    suppressed = defaultdict(Counter)  # agent -> {turn: n}
    for agent_id, turn, message in RefusalRow.objects.filter(
            run=run, kind=RefusalRow.LINE, message__contains=_SUPPRESSED_TEXT).values_list("agent_id", "turn", "message"):
        if m := SUPPRESSED_LINE.search(message):
            suppressed[agent_id][turn] += int(m["n"])
    mine = defaultdict(list)
    for (agent_id, _), g in groups.items():
        mine[agent_id].append(g)
    roster, totals = [], Counter()
    for agent in agents:
        capped = suppressed.get(agent.agent_id, Counter())
        if not mine.get(agent.agent_id) and not capped:
            continue
        spellings = {}  # operation -> this agent's spelling of it, spelled once
        out = []
        for g in sorted(mine.get(agent.agent_id, ()), key=lambda g: (-g["count"], g["seq"])):
            for e in g["shown"]:
                op = e["operation"]
                if op and op not in spellings:
                    spellings[op] = call_spelling(agent, op)
                spelled = spellings[op] if op else ""
                # The surface has no spelling for an operation it does not offer: gg's line quotes
                # the program's own, which is a fact rather than a guess.
                e["spelling"] = e["written"] if e["written"] and (not spelled or spelled == op) else spelled
            first = g["shown"][0]
            out.append({**g, "operation": first["operation"], "spelling": first["spelling"],
                        "hidden": g["count"] - len(g["shown"])})
            totals[first["operation"] or first["spelling"]] += g["count"]
        roster.append({"agent": agent, "groups": out, "capped": sorted(capped.items(), key=lambda tn: tn[0] or 0),
                       "refused": sum(g["count"] for g in out), "suppressed": sum(capped.values())})
    return {"agents": roster, "totals": totals.most_common(), "refused": sum(totals.values()),
            "suppressed": sum(r["suppressed"] for r in roster)}
