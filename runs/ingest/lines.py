"""Input lines -> `Line`s the writer stores: each one either decoded (raw text + `Decoded`) or
rejected (reason + a preview a text column holds). Nothing here touches the database.

A line is rejected when it is blank (empty or whitespace only: counted, never silently skipped), over
1 MiB (1,048,576 bytes of UTF-8, terminator excluded), not UTF-8, or anything `runs.stream.record`
refuses (not JSON, NaN/Infinity, not an object, nested deeper than its `MAX_DEPTH`, a lone surrogate,
a ``type`` that is not a string).
"""

from __future__ import annotations

import json
from typing import NamedTuple

from runs.models import RejectedLine
from runs.stream.record import NUL_ESCAPE, Decoded, RecordError, check_value, decode, json_kind, loads_record, scrub_nul

MAX_LINE_BYTES = 1024 * 1024
_READ_BLOCK = 1 << 16


class Line(NamedTuple):
    """One input line: `raw`, its object and `event` when it is stored, `rejection` ((reason,
    preview)) when not."""

    number: int
    raw: str | None
    obj: dict | None
    event: Decoded | None
    rejection: tuple | None = None


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


def preview(data) -> str:
    """The start of a rejected line, as text a database column holds (NUL shown as U+FFFD, a lone
    surrogate as U+FFFD)."""
    if isinstance(data, (bytes, bytearray)):
        data = bytes(data[: RejectedLine.RAW_LIMIT * 4]).decode("utf-8", errors="replace")
    data = data[: RejectedLine.RAW_LIMIT]
    if not data.isascii():  # a lone surrogate is no UTF-8 a column can hold
        data = data.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
    return scrub_nul(data)


def _rejected(number, reason, data) -> Line:
    return Line(number, None, None, None, (reason, preview(data)))


def parse_line(number: int, line, *, first: bool) -> Line:
    """An input line (bytes or str, with or without its terminator) read as the writer stores it."""
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
            return _rejected(number, f"line over 1 MiB ({size:,} bytes)", b)
        try:
            text = b.decode("utf-8")
        except UnicodeDecodeError as exc:
            return _rejected(number, f"not UTF-8 text (byte {exc.start + 1})", b)
    else:
        text = str(line)
        if text.endswith("\n"):
            text = text[:-1]
        if text.endswith("\r"):
            text = text[:-1]
        try:
            size = len(text.encode("utf-8"))
        except UnicodeEncodeError as exc:
            return _rejected(number, f"not UTF-8 text (character {exc.start + 1})", text)
        if size > MAX_LINE_BYTES:
            return _rejected(number, f"line over 1 MiB ({size:,} bytes)", text)
    if first and text.startswith("\ufeff"):
        text = text[1:]  # a byte-order mark is encoding, not content
    if not text.strip():
        return Line(number, None, None, None, ("blank line", text[: RejectedLine.RAW_LIMIT]))
    try:
        obj = loads_record(text)
        if not isinstance(obj, dict):
            return _rejected(number, f"not a JSON object (a JSON {json_kind(obj)})", text)
        return Line(number, text, obj, decode(obj))
    except RecordError as exc:
        return _rejected(number, str(exc), text)


# json.dumps(record, separators=(",", ":"), ensure_ascii=False), refusing NaN/Infinity (not JSON).
RECORD_ENCODER = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def dump_record(number: int, record) -> Line:
    """A record handed over as a Python value, stored as its compact JSON."""
    if not isinstance(record, dict):
        return _rejected(number, f"not a JSON object (a {type(record).__name__})", repr(record))
    try:
        text = RECORD_ENCODER.encode(record)
    except RecursionError:
        return _rejected(number, "not JSON-serializable: nested too deeply", "")
    except (TypeError, ValueError) as exc:
        return _rejected(number, f"not JSON-serializable: {exc}", repr(record))
    try:
        size = len(text) if text.isascii() else len(text.encode("utf-8"))  # ASCII: no surrogate, a byte each
    except UnicodeEncodeError as exc:
        return _rejected(number, f"not UTF-8 text (character {exc.start + 1})", repr(record))
    if size > MAX_LINE_BYTES:
        return _rejected(number, f"record over 1 MiB ({size:,} bytes)", text)
    try:
        check_value(record, text)
        obj = scrub_nul(record) if NUL_ESCAPE in text else record
        return Line(number, text, obj, decode(obj))
    except RecordError as exc:
        return _rejected(number, str(exc), text)
