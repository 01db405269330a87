"""A code turn's programs in full: the source the model submitted (the `submit_program` calls of
the turn's reply, read from the reply's `context_message` that `prompt.responseId` names), its
outcome under the heading gg gave the model (seeds/004: Compiler error, Runtime error, Notice),
the line the error names, the calls it made in order, the views it opened and its output.

A turn may run several programs (one `code_execution` each, in the order submitted); a program gg
ran from `programs.rerun` has no source on the stream, and says so.
"""

from __future__ import annotations

import operator
import re
from collections import defaultdict
from dataclasses import dataclass, field
from functools import reduce

from django.db.models import Q

from runs.models import Event, Run
from runs.pages import calls as call_pairs
from runs.stream.record import gg_record

# What the turn's events must include to assemble its programs (and what the turn page lists).
PROGRAM_TYPES = ("prompt", "context_message", "turn_outcome", "code_execution", "log") + call_pairs.CALL_TYPES
PROGRAMS_SHOWN = 20  # on the agent page, the latest (the rest a page at a time: 50 in full were half the page's time)
CALLS_LISTED = 200  # a program's calls it lists (one looping over files made 10,000); its turn's records list all
TURN_COLUMNS = ("seq", "type", "agent_id", "turn", "timestamp", "operation", "tool_name", "ok", "failure", "raw")

# The heading gg gives the model for a failed program, by the turn's error kind (seeds/004).
HEADINGS = {"transpile": "Compiler error", "program_fault": "Runtime error", "sandbox_limit": "Runtime error"}
# Where an error names a line of the model's own program: Python's frame line, "at line N", and
# the "<file>:line:column" / "<file>(line,column)" forms compilers write.
LINE_PATTERNS = (
    re.compile(r'File "<program>", line (\d+)'),
    re.compile(r"\bline (\d+)"),
    re.compile(r"\bprogram\.\w+[:(](\d+)[,:]\d+"),
)
VIEW_LINE = re.compile(r"the program (?P<verb>opened|replaced|closed) the (?:(?P<kind>\w+) )?view `(?P<selector>[^`]*)`"
                       r"(?: \(~(?P<tokens>\d+) tokens\))?")
REFUSED_VIEW_LINE = re.compile(r"a view call was refused: (?P<message>.*)", re.S)


def failing_line(error: str, line_count: int):
    """The last line of the program an error names (the innermost of the model's own frames), or None."""
    for pattern in LINE_PATTERNS:
        found = [int(n) for n in pattern.findall(error or "") if 0 < int(n) <= max(line_count, 1)]
        if found:
            return found[-1]
    return None


def submitted_programs(message: dict) -> list[str]:
    """The program strings of a reply's `submit_program` calls, in order (blank ones skipped, as gg
    runs none for them)."""
    out = []
    for call in message.get("toolCalls") if isinstance(message.get("toolCalls"), list) else ():
        if isinstance(call, dict) and call.get("name") == "submit_program":
            args = call.get("args") if isinstance(call.get("args"), dict) else {}
            if isinstance(args.get("program"), str) and args["program"].strip():
                out.append(args["program"])
    return out


@dataclass
class Program:
    seq: int
    agent_id: str
    turn: int | None
    record: dict
    source: str | None = None
    heading: str = ""
    error_type: str = ""
    calls: list = field(default_factory=list)  # [runs.pages.calls.Call], in order
    views: list = field(default_factory=list)  # [{verb, kind, selector, tokens, seq}] and refused views
    failing: int | None = None

    @property
    def ok(self):
        return self.record.get("ok")

    @property
    def error(self):
        return self.record.get("error") if isinstance(self.record.get("error"), str) else ""

    @property
    def logs(self):
        logs = self.record.get("logs")
        return [str(line) for line in logs] if isinstance(logs, list) else []

    @property
    def calls_listed(self):
        return self.calls[:CALLS_LISTED]

    @property
    def lines(self):
        """[(number, text, failing?)] of the source."""
        return [(n, text, n == self.failing) for n, text in enumerate((self.source or "").split("\n"), 1)]


def _turn_programs(rows, pool) -> list[Program]:
    """The programs of one agent's turn, from its events (TURN_COLUMNS, seq order) and the agent's
    pool entries {id: message} that the turn's reply may name."""
    response_id, outcome, sources, out = None, {}, [], []
    previous = 0
    for seq, etype, agent_id, turn, ts, op, tool, ok, failure, raw in rows:
        if etype == "prompt":
            response_id = gg_record(raw).get("responseId")
        elif etype == "turn_outcome":
            outcome = gg_record(raw)
        elif etype == "code_execution":
            out.append((previous, Program(seq, agent_id, turn, gg_record(raw))))
            previous = seq
    message = pool.get(response_id) if isinstance(response_id, str) else None
    sources = submitted_programs(message) if message else []
    kind = outcome.get("error") if isinstance(outcome.get("error"), str) else ""
    heading = HEADINGS.get(kind, "") if outcome.get("outcome") == "error" else ""
    call_rows = [r[:9] for r in rows if r[1] in call_pairs.CALL_TYPES]
    all_calls = call_pairs.pair_calls(call_rows)
    programs = []
    for i, (after, program) in enumerate(out):
        program.source = sources[i] if i < len(sources) else None
        program.calls = [c for c in all_calls if after < c.seq < program.seq]
        program.views = _views([r for r in rows if r[1] == "log" and after < r[0] < program.seq])
        if program.ok is False:
            # The turn's one error is the last failed program's (gg stops the turn there); a
            # program that failed with no error text was not run at all (a toolchain Notice).
            program.heading = heading or ("Runtime error" if program.error else "Notice")
            program.error_type = outcome["errorType"] if heading and isinstance(outcome.get("errorType"), str) else ""
            program.failing = failing_line(program.error, len((program.source or "").split("\n")))
        programs.append(program)
    return programs


def _views(log_rows) -> list[dict]:
    views = []
    for row in log_rows:
        message = gg_record(row[-1]).get("message")
        if not isinstance(message, str):
            continue
        if m := VIEW_LINE.search(message):
            views.append({**m.groupdict(), "seq": row[0], "refused": ""})
        elif m := REFUSED_VIEW_LINE.search(message):
            views.append({"verb": "refused", "kind": "", "selector": "", "tokens": None, "seq": row[0],
                          "refused": m["message"].strip()})
    return views


def _pool(run: Run, agent_id: str, rows) -> dict:
    """{id: message} of the turn's context_messages, plus — when a reply repeats one already pooled
    (gg defines each message once per agent) — that earlier definition (one more query)."""
    pool = {}
    for r in rows:
        if r[1] == "context_message":
            rec = gg_record(r[-1])
            if isinstance(rec.get("id"), str):
                pool[rec["id"]] = rec
    wanted = [gg_record(r[-1]).get("responseId") for r in rows if r[1] == "prompt"]
    missing = {w for w in wanted if isinstance(w, str) and w and w not in pool}
    if missing:
        match = reduce(operator.or_, (Q(raw__contains=m) for m in missing))
        for raw in Event.objects.filter(match, run=run, agent_id=agent_id, type="context_message").values_list(
                "raw", flat=True)[:len(missing) * 4]:
            rec = gg_record(raw)
            if isinstance(rec.get("id"), str) and rec["id"] in missing:
                pool.setdefault(rec["id"], rec)
    return pool


def turn_rows(run: Run, agent_id: str, turns, types=PROGRAM_TYPES) -> dict:
    """{turn: [row]} of one agent's events of `types` in `turns` (one query, seq order)."""
    by_turn = defaultdict(list)
    rows = Event.objects.filter(run=run, agent_id=agent_id, turn__in=list(turns), type__in=types)
    # Sorted here, not by ORDER BY: SQLite would then walk every record of the agent in seq order
    # instead of looking the turns up in the (run, agent_id, turn, seq) index.
    for row in sorted(rows.order_by().values_list(*TURN_COLUMNS)):
        by_turn[row[3]].append(row)
    return by_turn


def programs_of_turn(run: Run, agent_id: str, rows) -> list[Program]:
    return _turn_programs(rows, _pool(run, agent_id, rows))


def program_of(run: Run, event: Event) -> Program | None:
    """The program a `code_execution` record reports, assembled from its turn."""
    if not event.turn:
        return Program(event.seq, event.agent_id, event.turn, gg_record(event.raw))
    rows = turn_rows(run, event.agent_id, [event.turn])[event.turn]
    return next((p for p in programs_of_turn(run, event.agent_id, rows) if p.seq == event.seq), None)


def agent_programs(run: Run, agent_id: str, limit: int = PROGRAMS_SHOWN,
                   before: int | None = None) -> tuple[list[Program], bool]:
    """The agent's latest `limit` programs in full (those stored before seq `before`, when given: a
    page of older ones), oldest first, and whether older ones exist (three queries: the programs,
    their turns' events, repeated replies), however many programs the agent ran."""
    programs = Event.objects.filter(run=run, agent_id=agent_id, type="code_execution")
    if before is not None:
        programs = programs.filter(seq__lt=before)
    latest = list(programs.order_by("-seq").values_list("seq", "turn", "raw")[:limit + 1])
    more = len(latest) > limit
    latest = latest[:limit]
    turns = {t for _, t, _ in latest if t}
    by_turn = turn_rows(run, agent_id, turns or [0])  # turn 0 never exists: the same queries, programs or not
    every = [r for t in sorted(by_turn) for r in by_turn[t]]
    pool = _pool(run, agent_id, every)
    found = {p.seq: p for t in sorted(by_turn) for p in _turn_programs(by_turn[t], pool)}
    programs = [found.get(seq) or Program(seq, agent_id, turn, gg_record(raw)) for seq, turn, raw in reversed(latest)]
    return programs, more
