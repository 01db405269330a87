"""The refusal roster, folded (design.md "Refusal roster"; spec/stream.md §4.8, §5): each refused call
matched to its call as its records arrive, with running figures per (agent, call refused).

A refused call is a failed `api_result` that gg's "refused before it ran" line names, whatever its
class, or one that failed `unavailable`; the line gives the message, the result the class, and a line
with no result beside it (older streams) still counts. A line is matched to a failed result of the
same agent, turn and operation: the k-th line of an (agent, turn, operation) to its k-th result, in
whichever order they came (a queue of the unmatched per call, which holds only lines or only results).
The operation a line quotes is read by the surface its agent had reported when gg wrote it.

Only an agent's latest turn can gain a record, so what is still unmatched is read back per chunk from
the agent's turns the chunk touches (`RefusalRow.partner` is null). Each chunk writes its new rows,
updates the rows it matched, and adds what changed to the `RefusalGroup`s; the fold order is the log
order, so incremental == rebuilt.
"""

from __future__ import annotations

from collections import deque

from django.db.models import Q

from runs.ingest.fold_flush import in_chunks, insert_rows, update_rows
from runs.models import RefusalGroup, RefusalRow, Run
from runs.stream.refusals import REFUSED_LINE, SUPPRESSED_LINE, names_to_operations
from runs.stream.vocabulary import ID_MAX

TYPES = frozenset({"api_result", "log"})
UNAVAILABLE = "unavailable"  # gg's class for a call not offered to the agent: refused with or without a line
_ROW_FIELDS = ["operation", "failure", "message", "written", "partner", "entry", "key"]
_INSERT_FIELDS = ["seq", "kind", "agent_id", "turn", "suppressed", *_ROW_FIELDS]
_GROUP_FIELDS = ["operation", "written", "count", "failures", "messages", "first_turn", "last_turn", "first_seq"]
_OR_TERMS = 200  # (agent, turn) terms per query of the unmatched rows
MESSAGES_KEPT = 100  # distinct messages a group counts: gg words a few per call (past it, a hostile stream's, which are kept may depend on the chunking)


class Roster:
    """One fold call's refusal rows: `note` each record as the fold applies it, then `flush`."""

    def __init__(self, run: Run):
        self.run = run
        self.rows: list[RefusalRow] = []  # new, in seq order
        self._names: dict[str, tuple] = {}  # agent -> (its apis, its language, their names)

    def note(self, seq: int, e, turn, agent) -> None:
        """Keep the record's RefusalRow if it is one (`agent`: its Agent, as the fold has it now)."""
        if e.type == "api_result":
            if e.ok is False:
                self.rows.append(RefusalRow(run=self.run, seq=seq, kind=RefusalRow.FAILED, agent_id=e.agent_id,
                                            turn=turn, operation=e.operation, failure=e.failure))
            return
        message = e.record.get("message") if e.record is not None else None
        if not isinstance(message, str) or "refused" not in message:
            return
        if m := REFUSED_LINE.search(message):
            written = m["name"][:ID_MAX]
            self.rows.append(RefusalRow(run=self.run, seq=seq, kind=RefusalRow.LINE, agent_id=e.agent_id, turn=turn,
                                        operation=self._operation(agent, written), written=written,
                                        message=m["message"].strip()))
        elif m := SUPPRESSED_LINE.search(message):
            self.rows.append(RefusalRow(run=self.run, seq=seq, kind=RefusalRow.CAPPED, agent_id=e.agent_id,
                                        turn=turn, suppressed=min(int(m["n"]), 2 ** 31 - 1)))

    def _operation(self, agent, written: str) -> str:
        if agent is None:
            return ""
        known = self._names.get(agent.agent_id)
        if known is None or known[0] is not agent.apis or known[1] != agent.program_language:
            known = (agent.apis, agent.program_language, names_to_operations(agent.apis, agent.program_language))
            self._names[agent.agent_id] = known
        return known[2].get(written, "")

    def flush(self) -> list[RefusalRow]:
        """Match the chunk's rows, write them and the groups they change; the rows written."""
        rows, self.rows = self.rows, []
        if not rows:
            return rows
        queues, touched = self._unmatched(rows), {}
        groups = _Groups(self.run)
        for row in rows:
            if row.kind == RefusalRow.CAPPED:
                continue
            if not row.operation:  # a call no surface names: matched to nothing
                if row.kind == RefusalRow.LINE or row.failure == UNAVAILABLE:
                    groups.enter(row)
                continue
            queue = queues.setdefault((row.agent_id, row.turn, row.operation), deque())
            if queue and queue[0].kind != row.kind:
                _match(queue.popleft(), row, groups, touched)
                continue
            queue.append(row)
            if row.kind == RefusalRow.LINE or row.failure == UNAVAILABLE:
                groups.enter(row)
        # One executemany whatever the chunk holds (bulk_create batches by SQLite's variable limit).
        insert_rows(RefusalRow, rows, _INSERT_FIELDS, run_id=self.run.pk)
        update_rows(RefusalRow, list(touched.values()), _ROW_FIELDS)
        groups.write()
        return rows

    def _unmatched(self, rows) -> dict:
        """(agent, turn, operation) -> the stored rows still unmatched, in seq order, for the turns the
        chunk's rows fall in (an agent's turns only grow: its first in the chunk, and later)."""
        first = {}
        for r in rows:
            if r.operation and r.kind != RefusalRow.CAPPED:
                first.setdefault(r.agent_id, r.turn)
        queues = {}
        # The run in each term, none outside: then each is a range of the `refusal_unmatched` index. With the
        # run outside, SQLite walked the run's rows of each kind instead (2,200 rows: 6.2 ms against 2.5).
        terms = [Q(run=self.run, agent_id=a, turn__gte=t) if t is not None else Q(run=self.run, agent_id=a)
                 for a, t in first.items()]
        for i in range(0, len(terms), _OR_TERMS):
            found = Q()
            for term in terms[i:i + _OR_TERMS]:
                found |= term
            for r in (RefusalRow.objects.filter(found, partner__isnull=True, kind__in=[RefusalRow.FAILED, RefusalRow.LINE])
                      .exclude(operation="").order_by("seq")):
                queues.setdefault((r.agent_id, r.turn, r.operation), deque()).append(r)
        return queues


def _match(earlier: RefusalRow, later: RefusalRow, groups: "_Groups", touched: dict) -> None:
    """A line and the failed result of its call: the earlier row holds the refused call."""
    earlier.partner, later.partner = later.seq, earlier.seq
    if earlier.pk is not None:
        touched[earlier.pk] = earlier
    line, result = (earlier, later) if earlier.kind == RefusalRow.LINE else (later, earlier)
    if earlier.entry:  # already counted: a line waiting for its class, or an `unavailable` result its message
        groups.amend(earlier, failure=result.failure, message=line.message, written=line.written)
    else:
        earlier.failure, earlier.message, earlier.written = result.failure, line.message, line.written
        groups.enter(earlier)


class _Groups:
    """The RefusalGroups a chunk changes, read once, written once."""

    def __init__(self, run: Run):
        self.run = run
        self.entries: list[RefusalRow] = []
        self.amends: list[tuple] = []

    def enter(self, row: RefusalRow) -> None:
        row.entry, row.key = True, row.operation or row.written
        self.entries.append(row)

    def amend(self, row: RefusalRow, *, failure: str, message: str, written: str) -> None:
        """A counted call's class, message and name learnt from the row matched to it (a call this
        chunk counted is counted as it ends up)."""
        if row.pk is not None:
            self.amends.append((row.agent_id, row.key, row.seq, row.failure, row.message, failure, message, written))
        row.failure, row.message, row.written = failure, message, row.written or written

    def write(self) -> None:
        if not self.entries and not self.amends:
            return
        agents = {r.agent_id for r in self.entries} | {a[0] for a in self.amends}
        # An agent's groups are the few calls it had refused: read whole.
        stored = {(g.agent_id, g.key): g for g in in_chunks(RefusalGroup.objects.filter(run=self.run), "agent_id", agents)}
        new = {}
        for r in self.entries:
            g = stored.get((r.agent_id, r.key))
            if g is None:
                g = stored[(r.agent_id, r.key)] = new[(r.agent_id, r.key)] = RefusalGroup(
                    run=self.run, agent_id=r.agent_id, key=r.key, operation=r.operation, first_seq=r.seq)
            g.count += 1
            _bump(g.failures, r.failure, 1)
            _add_message(g.messages, r.message, r.seq)
            g.written = _name(g.written, r.written)
            g.first_seq = min(g.first_seq, r.seq)
            if r.turn is not None:
                g.first_turn = r.turn if g.first_turn is None else min(g.first_turn, r.turn)
                g.last_turn = r.turn if g.last_turn is None else max(g.last_turn, r.turn)
        # A call counted in an earlier chunk is amended after this chunk's entries joined its group.
        for agent_id, key, seq, failure, message, now_failure, now_message, written in self.amends:
            g = stored[(agent_id, key)]
            g.written = _name(g.written, written)
            _bump(g.failures, failure, -1)
            _bump(g.failures, now_failure, 1)
            if not message:
                _add_message(g.messages, now_message, seq)
        RefusalGroup.objects.bulk_create(new.values())
        update_rows(RefusalGroup, [g for k, g in stored.items() if k not in new], _GROUP_FIELDS)


def _bump(counts: dict, key: str, n: int) -> None:
    """{key: n} += n, a key that reaches 0 dropped."""
    counts[key] = counts.get(key, 0) + n
    if not counts[key]:
        del counts[key]


def _add_message(messages: dict, message: str, seq: int) -> None:
    """{message: [n, its first call's seq]} (a call gains a message, never loses one: the counts only
    grow); a message past MESSAGES_KEPT distinct is not counted (the roster reads the top one)."""
    if not message:
        return
    kept = messages.get(message)
    if kept is None:
        if len(messages) < MESSAGES_KEPT:
            messages[message] = [1, seq]
        return
    kept[0] += 1
    kept[1] = min(kept[1], seq)


def _name(kept: str, written: str) -> str:
    """The name a group is spelled by where its surface spells none: the least of gg's quotes of it,
    so that it does not depend on which of a chunk's rows came first."""
    return min(kept, written) if kept and written else kept or written
