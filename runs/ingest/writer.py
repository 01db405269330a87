"""The one write path: every source's records go through `append` / `append_lines`.

* Every line is accounted for: stored as an `Event` (seq 1..n per run, the line verbatim), skipped as
  a duplicate of a line already stored (re-import), or kept as a `RejectedLine` with its line number
  and reason. ``stored + duplicates + rejected == lines``; on a first import ``stored + rejected``.
* A line is rejected when it is blank (empty or whitespace only: counted, never silently skipped),
  over 1 MiB (1,048,576 bytes of UTF-8, terminator excluded), not UTF-8, not JSON (NaN/Infinity
  included), or JSON that is not an object. A JSON object of any ``type`` is stored.
* Re-import of lines (a file, an upload, a POSTed body: `append_lines` / `append_stream`) is
  idempotent: a line whose sha256 (`Event.digest`) was already stored n times in the run is a
  duplicate for its first n occurrences in the new input, so a stream that legitimately repeats an
  identical line keeps every repetition, and re-importing it stores nothing twice. Rejected lines
  are not stored twice either (same line number and text). Records handed over as dicts
  (`append`, the engine's way in) are all stored unless the caller asks for the same rule.
* Each chunk of lines (`CHUNK_LINES`) is one transaction: Events inserted with one ``executemany``,
  the fold (`runs.ingest.projections.Projector`) updates every projection row it touched once, the run's
  figures are saved, and on commit the doorbell rings (`runs.feed.doorbell`). Memory stays bounded by the
  chunk, whatever the size of the input.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field

from django.db import connection, transaction
from django.db.models import Count
from django.utils import timezone

from runs.across import facts as run_facts
from runs.feed import doorbell, search
from runs.models import Event, RejectedLine, Run
from runs.ingest.projections import NUL_ESCAPE, Projector, event_columns, loads_record, scrub_nul

MAX_LINE_BYTES = 1024 * 1024
CHUNK_LINES = 2000
_READ_BLOCK = 1 << 16
_DIGESTS_PER_QUERY = 10_000  # one query per chunk (SQLite allows 32,766 parameters since 3.32)

__all__ = [
    "AppendResult",
    "MAX_LINE_BYTES",
    "CHUNK_LINES",
    "append",
    "append_lines",
    "append_stream",
    "iter_lines",
]


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
        text = f"stored {self.stored}, rejected {self.rejected}"
        if self.duplicates:
            text += f" ({self.duplicates} already stored)"
        return text


# ---------------------------------------------------------------------------------------------
# Lines


class OversizeLine(bytes):
    """A line cut short by `iter_lines` because it is over the bound; `size` is its real length."""

    size: int = 0


def iter_lines(stream, *, limit: int = MAX_LINE_BYTES):
    """Yield the lines of a binary stream (split on ``\\n`` only), holding at most `limit` + 1 bytes
    of any one line in memory: a longer line is yielded as an `OversizeLine` prefix."""
    pending = bytearray()
    over = 0  # bytes dropped from the current line
    while True:
        block = stream.read(_READ_BLOCK)
        if not block:
            break
        if isinstance(block, str):
            block = block.encode("utf-8")
        start = 0
        while True:
            nl = block.find(b"\n", start)
            piece = block[start:] if nl < 0 else block[start:nl]
            room = limit + 2 - len(pending)  # the bound, a "\r" and one byte to tell it is over
            if room > 0:
                pending += piece[:room]
                over += max(0, len(piece) - room)
            else:
                over += len(piece)
            if nl < 0:
                break
            yield _finish_line(pending, over)
            pending, over = bytearray(), 0
            start = nl + 1
    if pending or over:
        yield _finish_line(pending, over)


def _finish_line(pending: bytearray, over: int):
    if over:
        line = OversizeLine(bytes(pending))
        line.size = len(pending) + over
        return line
    return bytes(pending)


def _preview(data) -> str:
    """The start of a rejected line, as text a database column holds (NUL shown as U+FFFD)."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data[: RejectedLine.RAW_LIMIT * 4]).decode("utf-8", errors="replace")
    return scrub_nul(data[: RejectedLine.RAW_LIMIT])


def _parse_line(line, *, first: bool):
    """(raw text, object, None) for a storable line, or (None, None, (reason, preview))."""
    if isinstance(line, (bytes, bytearray, memoryview)):
        size = getattr(line, "size", None)
        b = bytes(line)
        if b.endswith(b"\n"):
            b = b[:-1]
        if b.endswith(b"\r"):
            b = b[:-1]
        if size is None:
            size = len(b)
        if size > MAX_LINE_BYTES:
            return None, None, (f"line over 1 MiB ({size:,} bytes)", _preview(b))
        try:
            text = b.decode("utf-8")
        except UnicodeDecodeError as exc:
            return None, None, (f"not UTF-8 text (byte {exc.start + 1})", _preview(b))
    else:
        text = str(line)
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return None, None, (f"not UTF-8 text (character {exc.start + 1})", _preview(text))
        if size > MAX_LINE_BYTES:
            return None, None, (f"line over 1 MiB ({size:,} bytes)", _preview(text))
    if first and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is encoding, not content
    if not text.strip():
        return None, None, ("blank line", text[: RejectedLine.RAW_LIMIT])
    try:
        obj = loads_record(text)
    except ValueError as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        pos = getattr(exc, "pos", None)
        where = f" (character {pos + 1})" if isinstance(pos, int) else ""
        return None, None, (f"not JSON: {msg}{where}", _preview(text))
    except RecursionError:
        return None, None, ("not JSON: nested too deeply", _preview(text))
    if not isinstance(obj, dict):
        return None, None, (f"not a JSON object (a JSON {_json_kind(obj)})", _preview(text))
    return text, obj, None


def _json_kind(value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return type(value).__name__


# json.dumps(record, separators=(",", ":"), ensure_ascii=False), refusing NaN/Infinity (not JSON).
_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def _dump_record(record):
    """(raw text, object, None) for a record handed over as a Python value."""
    if not isinstance(record, dict):
        return None, None, (f"not a JSON object (a {type(record).__name__})", _preview(repr(record)))
    try:
        text = _ENCODER.encode(record)
    except (TypeError, ValueError, RecursionError) as exc:
        return None, None, (f"not JSON-serializable: {exc}", _preview(repr(record)))
    try:
        size = len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        return None, None, (f"not UTF-8 text (character {exc.start + 1})", _preview(repr(record)))
    if size > MAX_LINE_BYTES:
        return None, None, (f"record over 1 MiB ({size:,} bytes)", _preview(text))
    return text, (scrub_nul(record) if NUL_ESCAPE in text else record), None


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

    def commit_chunk(self, entries) -> None:
        """entries: [(line_number, raw, obj, rejection)] — one transaction."""
        if not entries:
            return
        with transaction.atomic():
            run = Run.objects.select_for_update().get(pk=self.run.pk)
            if self.fresh_run is None:
                self.fresh_run = run.last_seq == 0 and run.rejected_count == 0
            accepted = [(n, raw, obj) for n, raw, obj, rej in entries if rej is None]
            rejected = [(n, rej) for n, raw, obj, rej in entries if rej is not None]
            digests = [hashlib.sha256(raw.encode("utf-8")).hexdigest() for _, raw, _ in accepted]
            if self.dedupe and not self.fresh_run and accepted:
                accepted, digests = self._drop_duplicates(run, accepted, digests)

            projector = Projector(run)
            classified = [event_columns(obj) for _, _, obj in accepted]
            projector.preload([c[1] for c in classified if c[1] is not None])
            now = connection.ops.adapt_datetimefield_value(timezone.now())
            rows = []
            seq = run.last_seq
            for (_, raw, _), digest, cols in zip(accepted, digests, classified):
                seq += 1
                etype, rec, agent_id, ts, operation, tool_name, ok, failure = cols
                turn = projector.apply(seq, etype, rec)
                rows.append(
                    (run.pk, seq, etype, agent_id, ts, now, raw, digest, operation, tool_name, ok, failure, turn)
                )
            if rows:
                _insert_events(rows)
                search.index(run.pk, [(row[1], obj) for row, (_, _, obj) in zip(rows, accepted)])
                if self.result.first_seq is None:
                    self.result.first_seq = rows[0][1]
            run.last_seq = seq

            new_rejections = self._store_rejections(run, rejected)
            run.rejected_count += new_rejections
            projector.flush(extra_run_fields=("last_seq", "rejected_count"))
            run_facts.after_chunk(run, classified)  # what the runs list filters on

            self.result.stored += len(rows)
            self.result.rejected += len(rejected)
            self.result.rejections.extend((n, reason) for n, (reason, _) in rejected)
            self.result.last_seq = run.last_seq
            self.result.status_changed |= projector.status_changed
            if rows or projector.status_changed:
                doorbell.ring_on_commit(
                    run.pk, run.last_seq, run.status if projector.status_changed else None
                )
        _copy_run_fields(run, self.run)

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
                    run=run, line_number__in=[n for n, _ in rejected]
                ).values_list("line_number", "raw")
            )
        rows = []
        for n, (reason, preview) in rejected:
            if (n, preview) in existing:
                continue
            existing.add((n, preview))
            rows.append(RejectedLine(run=run, line_number=n, reason=reason[:300], raw=preview))
        RejectedLine.objects.bulk_create(rows)
        return len(rows)


_EVENT_COLUMNS = (
    "run_id", "seq", "type", "agent_id", "timestamp", "received_at", "raw", "digest",
    "operation", "tool_name", "ok", "failure", "turn",
)  # fmt: skip


def _insert_events(rows) -> None:
    qn = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        qn(Event._meta.db_table),
        ", ".join(qn(c) for c in _EVENT_COLUMNS),
        ", ".join(["%s"] * len(_EVENT_COLUMNS)),
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, rows)


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

    def entries():
        for i, record in enumerate(records, start=1):
            raw, obj, rej = _dump_record(record)
            yield (i, raw, obj, rej)

    return _run_chunks(imp, entries(), chunk_lines)


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
                raw, obj, rej = _parse_line(held, first=(n == 1))
                yield (n, raw, obj, rej)
                n += 1
            held = line
        # An empty last item is what splitting "a\nb\n" on "\n" leaves after the final
        # terminator: not a line. (A whitespace-only last line is a line, and is rejected.)
        if held is not _NOTHING and not (
            ignore_final_empty and isinstance(held, (str, bytes, bytearray)) and len(held) == 0
        ):
            raw, obj, rej = _parse_line(held, first=(n == 1))
            yield (n, raw, obj, rej)

    return _run_chunks(imp, entries(), chunk_lines)


_NOTHING = object()


def append_stream(run: Run, stream, **kwargs) -> AppendResult:
    """Store the lines of a binary file-like object (a file, an upload, a request body): a final
    terminator ends the last line; ``a\\n\\n`` is two lines, the second blank (and rejected)."""
    return append_lines(run, iter_lines(stream), ignore_final_empty=False, **kwargs)
