"""The one write path: every source's records go through `append` / `append_lines`.

* Every line is accounted for: stored as an `Event` (seq 1..n per run, the line verbatim), skipped as
  a duplicate of a line already stored (re-import), or kept as a `RejectedLine` with its line number
  and reason. ``stored + duplicates + rejected == lines``; on a first import ``stored + rejected``.
  One line never costs another: what `runs.ingest.lines` refuses is rejected, the rest of its chunk
  is stored.
* Re-import of lines (a file, an upload, a POSTed body: `append_lines` / `append_stream`) is
  idempotent: a line whose sha256 (`Event.digest`) was already stored n times in the run is a
  duplicate for its first n occurrences in the new input, so a stream that legitimately repeats an
  identical line keeps every repetition, and re-importing it stores nothing twice. Rejected lines
  are not stored twice either (same line number and text). Records handed over as dicts
  (`append`, the engine's way in) are all stored unless the caller asks for the same rule.
* A run whose deletion was asked for (`runs.ingest.deletion`) takes no more: `RunGone`, nothing stored.
* Each chunk of lines (`CHUNK_LINES`) is one transaction: Events inserted with one statement
  (``COPY`` on PostgreSQL, ``executemany`` on SQLite), the fold (`runs.ingest.fold.fold`) updates
  every projection row it touched once, the run's figures are saved, and on commit the doorbell
  rings (`runs.feed.doorbell`). Memory stays bounded by the chunk, whatever the size of the input
  (and the message pools and agents carried between chunks, a few runs' `fold_pool.ROWS_KEPT` rows
  and agents).
"""

from __future__ import annotations

import hashlib
import threading
from collections import Counter
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from runs.ingest import facts as run_facts, statistics
from runs.feed import checkpoints, doorbell, search
from runs.ingest.fold import FoldRow, fold
from runs.ingest.lines import MAX_LINE_BYTES, OversizeLine, dump_record, iter_lines, parse_line
from runs.models import Event, RejectedLine, Run

CHUNK_LINES = 2000
_DIGESTS_PER_QUERY = 10_000  # one query per chunk (SQLite allows 32,766 parameters since 3.32)

__all__ = [
    "AppendResult",
    "MAX_LINE_BYTES",
    "CHUNK_LINES",
    "OversizeLine",
    "RunGone",
    "append",
    "append_lines",
    "append_stream",
    "iter_lines",
]


class RunGone(LookupError):
    """The run was deleted (or its deletion asked for) before this write: nothing more is stored for it."""


def locked_run(run: Run) -> Run:
    """`run`'s row read again and locked for this transaction; `RunGone` once its deletion was asked
    for (a request committed before this one is seen here, after waiting for it)."""
    locked = Run.objects.select_for_update().filter(pk=run.pk).first()
    if locked is None:
        raise RunGone(f"Run {run.name!r} was deleted; nothing more is stored for it.")
    return locked


@dataclass
class AppendResult:
    stored: int = 0
    rejected: int = 0
    duplicates: int = 0  # lines already stored in this run (re-import), skipped
    last_seq: int = 0  # the run's last seq after the append
    first_seq: int | None = None  # seq of the first event this append stored
    rejections: list = field(default_factory=list)  # [(line_number, reason)]
    status_changed: bool = False

    @property
    def lines(self) -> int:
        return self.stored + self.rejected + self.duplicates

    def as_dict(self) -> dict:
        return {
            "stored": self.stored,
            "rejected": self.rejected,
            "duplicates": self.duplicates,
            "lines": self.lines,
            "last_seq": self.last_seq,
            "rejections": [{"line": n, "reason": r} for n, r in self.rejections],
        }

    def summary(self) -> str:
        text = f"stored {self.stored:,}, rejected {self.rejected:,}"
        if self.duplicates:
            text += f" ({self.duplicates:,} already stored)"
        return text


# ---------------------------------------------------------------------------------------------
# The write path


class _Import:
    """One call of append/append_lines: accumulates the result and the dedupe state."""

    def __init__(self, run: Run, dedupe: bool):
        self.run = run
        self.dedupe = dedupe
        self.result = AppendResult(last_seq=run.last_seq)
        self.fresh_run = None  # decided at the first chunk, from the locked row
        self.baseline: dict[str, int] = {}  # digest -> occurrences stored before this import
        self.seen: Counter = Counter()  # digest -> occurrences so far in this import

    def commit_chunk(self, lines) -> None:
        """lines: [`Line`] — one transaction."""
        if not lines:
            return
        with transaction.atomic():
            run = locked_run(self.run)
            before = run.last_seq
            if self.fresh_run is None:
                self.fresh_run = run.last_seq == 0 and run.rejected_count == 0
            accepted = [line for line in lines if line.rejection is None]
            rejected = [line for line in lines if line.rejection is not None]
            digests = [hashlib.sha256(line.raw.encode("utf-8")).hexdigest() for line in accepted]
            if self.dedupe and not self.fresh_run and accepted:
                accepted, digests = self._drop_duplicates(run, accepted, digests)

            rows = [FoldRow(run.last_seq + i, line.event) for i, line in enumerate(accepted, start=1)]
            run.last_seq += len(rows)
            run.rejected_count += self._store_rejections(run, rejected)
            pool, known, held = _carried(run, len(rows)) if rows else (None, None, None)
            folded = fold(run, rows, extra_run_fields=("last_seq", "rejected_count"), pool=pool, known=known)
            if rows:
                now = connection.ops.adapt_datetimefield_value(timezone.now())
                _insert_events(
                    (run.pk, seq, e.type, e.agent_id, e.timestamp, now, line.raw, digest, e.operation, e.tool_name,
                     e.ok, e.failure, turn, ms)
                    for (seq, e), line, digest, turn, ms in zip(rows, accepted, digests, folded.turns, folded.call_ms)
                )
                search.index(run.pk, [(seq, line.obj) for (seq, _), line in zip(rows, accepted)])
                checkpoints.record(run.pk, rows[0].seq - 1, [(seq, e.type, e.agent_id) for seq, e in rows])
                if self.result.first_seq is None:
                    self.result.first_seq = rows[0].seq
            # What the runs list filters on (the log too); its agents ride to the next chunk's fold.
            agents, held = run_facts.after_chunk(run, [row.event for row in rows], refusals=folded.refusals,
                                                 agents=folded.agents, held=held)
            if rows:
                transaction.on_commit(lambda key=_carry_key(run), seq=run.last_seq, left=(folded.pool, agents, held):
                                      _keep(key, seq, left))

            self.result.stored += len(rows)
            self.result.rejected += len(rejected)
            self.result.rejections.extend((line.number, line.rejection[0]) for line in rejected)
            self.result.last_seq = run.last_seq
            self.result.status_changed |= folded.status_changed
            if rows or folded.status_changed:
                doorbell.ring_on_commit(run.pk, run.last_seq, run.status if folded.status_changed else None)
        _copy_run_fields(run, self.run)
        statistics.keep_up(before, run.last_seq)

    def _drop_duplicates(self, run, accepted, digests):
        unknown = {d for d in digests if d not in self.baseline}
        if unknown:
            for d in unknown:
                self.baseline[d] = 0
            unknown = list(unknown)
            for i in range(0, len(unknown), _DIGESTS_PER_QUERY):
                counts = (
                    Event.objects.filter(run=run, digest__in=unknown[i : i + _DIGESTS_PER_QUERY])
                    .values("digest")
                    .annotate(n=Count("id"))
                    .values_list("digest", "n")
                )
                self.baseline.update(counts)
        kept, kept_digests = [], []
        for entry, d in zip(accepted, digests):
            self.seen[d] += 1
            if self.seen[d] <= self.baseline[d]:
                self.result.duplicates += 1
            else:
                kept.append(entry)
                kept_digests.append(d)
        return kept, kept_digests

    def _store_rejections(self, run, rejected) -> int:
        if not rejected:
            return 0
        existing = set()
        if not self.fresh_run:
            existing = set(
                RejectedLine.objects.filter(
                    run=run, line_number__in=[line.number for line in rejected]
                ).values_list("line_number", "raw")
            )
        rows = []
        for line in rejected:
            reason, preview = line.rejection
            if (line.number, preview) in existing:
                continue
            existing.add((line.number, preview))
            rows.append(RejectedLine(run=run, line_number=line.number, reason=reason[:300], raw=preview))
        RejectedLine.objects.bulk_create(rows)
        return len(rows)


_EVENT_COLUMNS = (
    "run_id", "seq", "type", "agent_id", "timestamp", "received_at", "raw", "digest",
    "operation", "tool_name", "ok", "failure", "turn", "call_ms",
)  # fmt: skip


def _insert_events(rows) -> None:
    """One statement for the chunk's rows: COPY on PostgreSQL, one ``executemany`` on SQLite."""
    qn = connection.ops.quote_name
    if connection.vendor == "postgresql":
        sql = "COPY {} ({}) FROM STDIN".format(qn(Event._meta.db_table), ", ".join(qn(c) for c in _EVENT_COLUMNS))
        with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
            for row in rows:
                copy.write_row(row)
        return
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        qn(Event._meta.db_table),
        ", ".join(qn(c) for c in _EVENT_COLUMNS),
        ", ".join(["%s"] * len(_EVENT_COLUMNS)),
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


# What each run's last committed chunk left, by run: its message pool (runs.ingest.fold_pool.Pool),
# its agents (`Folded.agents`) and what its facts left (`runs.ingest.facts.Held`). The
# next chunk starts from them when nothing has been folded into the run since (its last_seq is the one
# they were left at; a rebuild in between folds the same rows again). A few runs are kept.
_CARRIED: dict = {}
_CARRIED_KEPT = 8
_CARRIED_LOCK = threading.Lock()  # appends to different runs run on threads at once


def _carry_key(run: Run):
    return run.pk, run.created_at  # a deleted run's pk may be handed to a new one


def _carried(run: Run, appended: int) -> tuple:
    """(pool, agents, facts' held) for `run`'s chunk of `appended` rows (its last_seq counts them), or Nones."""
    with _CARRIED_LOCK:
        seq, left = _CARRIED.pop(_carry_key(run), (None, None))
    return left if seq == run.last_seq - appended else (None, None, None)


def _keep(key, seq: int, left: tuple) -> None:
    with _CARRIED_LOCK:
        _CARRIED[key] = (seq, left)
        while len(_CARRIED) > _CARRIED_KEPT:
            del _CARRIED[next(iter(_CARRIED))]


def _copy_run_fields(src: Run, dst: Run) -> None:
    if src is dst:
        return
    for f in src._meta.concrete_fields:
        if not f.primary_key:
            setattr(dst, f.attname, getattr(src, f.attname))


def _run_chunks(imp: _Import, entries_iter, chunk_lines: int) -> AppendResult:
    chunk = []
    for entry in entries_iter:
        chunk.append(entry)
        if len(chunk) >= chunk_lines:
            imp.commit_chunk(chunk)
            chunk = []
    imp.commit_chunk(chunk)
    return imp.result


def append(run: Run, records, *, dedupe: bool = False, chunk_lines: int = CHUNK_LINES) -> AppendResult:
    """Store gg records handed over as Python dicts (bare, or host-wrapped ``{"type":"gg",...}``).

    Each is stored as its compact JSON (``separators=(",", ":")``, ``ensure_ascii=False``).
    Line numbers in rejections are 1-based positions in `records`.

    A producer handing over records (the built-in engine) emits each once, so two identical
    records are two events: every record is stored. ``dedupe=True`` applies the re-import rule of
    `append_lines` instead (for a caller that may resend what it already handed over).
    """
    imp = _Import(run, dedupe)
    return _run_chunks(imp, (dump_record(i, record) for i, record in enumerate(records, start=1)), chunk_lines)


def append_lines(
    run: Run,
    lines,
    *,
    first_line_number: int = 1,
    dedupe: bool = True,
    chunk_lines: int = CHUNK_LINES,
    ignore_final_empty: bool = True,
) -> AppendResult:
    """Store NDJSON lines (bytes or str, with or without their terminator), each exactly as received
    minus the terminator (``\\n`` or ``\\r\\n``). See the module docstring for what is rejected.

    Line numbers count from `first_line_number`. A blank line counts as a line and is rejected
    ("blank line"); only an empty final item — what ``text.split("\\n")`` leaves after a final
    terminator — is not a line (``ignore_final_empty=False`` counts it too, for callers whose
    items are exactly the lines, as `iter_lines` yields them)."""
    imp = _Import(run, dedupe)

    def entries():
        n = first_line_number
        held = _NOTHING
        for line in lines:
            if held is not _NOTHING:
                yield parse_line(n, held, first=(n == 1))
                n += 1
            held = line
        # An empty last item is what splitting "a\nb\n" on "\n" leaves after the final
        # terminator: not a line. (A whitespace-only last line is a line, and is rejected.)
        if held is not _NOTHING and not (
            ignore_final_empty and isinstance(held, (str, bytes, bytearray)) and len(held) == 0
        ):
            yield parse_line(n, held, first=(n == 1))

    return _run_chunks(imp, entries(), chunk_lines)


_NOTHING = object()


def append_stream(run: Run, stream, **kwargs) -> AppendResult:
    """Store the lines of a binary file-like object (a file, an upload, a request body): a final
    terminator ends the last line; ``a\\n\\n`` is two lines, the second blank (and rejected)."""
    return append_lines(run, iter_lines(stream), ignore_final_empty=False, **kwargs)
