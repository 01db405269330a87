"""One stored line, decoded: the only place a line of the stream becomes a record.

`loads_record` reads a line the way every reader does (the write path, a rebuild, the feed, the
pages, the gg binary's runner); `decode` tells what the record is and the Event columns that depend on
it alone; `gg_record` is the gg record inside a stored line (`record_of`: or the host's own row).

What a line must be to be stored (each refusal is a `RecordError` with its reason, which the write
path keeps as a RejectedLine): strict JSON (NaN/Infinity refused), an object, nested at most
`MAX_DEPTH` levels of objects and arrays, no lone surrogate escape (``"\\ud800"``: no UTF-8 column can
hold it) in any string or key, and a ``type`` that is a string when present. Numbers past a double's
range read as null and NUL characters as U+FFFD (PostgreSQL's text and jsonb refuse NUL); the line
itself is stored verbatim either way.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from typing import NamedTuple

from runs.stream.vocabulary import (
    HOST_KINDS, ID_MAX, JUDGE_ENDINGS, REVIEW_ENDINGS, REVIEW_OPERATIONS, SHORT_MAX, TYPE_MAX,
)  # fmt: skip

# Levels of objects and arrays a record may nest. Real gg records nest a dozen levels; the bound
# keeps every reader (recursive JSON encoders, templates, jsonb) far from Python's recursion limit,
# and is the same for parsing, for the JSON columns the fold fills from a record and for reads.
MAX_DEPTH = 100


class RecordError(ValueError):
    """A line that cannot be stored as it is; the message is the rejection's reason."""


def as_text(value, limit=ID_MAX) -> str:
    """A stream field as bounded text: absent is empty, a non-string is its compact JSON."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value[:limit]


def as_list(value) -> list:
    """A record's array field, or [] when it holds anything else (a record is untrusted input)."""
    return value if isinstance(value, list) else []


# ---------------------------------------------------------------------------------------------
# Parsing


def _finite_float(text: str):
    """A JSON number with a fraction or exponent; one past a double's range (``1e400`` is valid JSON
    syntax) reads as null, so no projection row ever holds an infinity no JSON column can store."""
    value = float(text)
    return value if math.isfinite(value) else None


def _no_constant(name):
    raise RecordError(f"not JSON: {name} is not valid JSON")


# A JSON string can hold a NUL character only as this escape (a raw control character is not JSON),
# so a line without it needs no scrubbing: the hot path pays one substring search.
NUL_ESCAPE = "\\u0000"
# A surrogate can only reach a decoded string through an escape; a line without one has none.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


# One decoder for every line: json.loads with these arguments builds a decoder per call, a third
# of the time a short record takes to read. json.loads itself for what the decoder does not do.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite_float)


def loads_record(text: str):
    """A stored line read as every reader reads it (see the module docstring); raises `RecordError`."""
    try:
        if isinstance(text, str) and not text.startswith("\ufeff"):
            obj = _DECODER.decode(text)
        else:  # bytes, or a BOM json.loads names
            obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise RecordError(f"nested deeper than {MAX_DEPTH} levels") from None
    except RecordError:
        raise
    except ValueError as exc:
        msg = getattr(exc, "msg", None) or str(exc)
        pos = getattr(exc, "pos", None)
        where = f" (character {pos + 1})" if isinstance(pos, int) else ""
        raise RecordError(f"not JSON: {msg}{where}") from None
    check_value(obj, text)
    return scrub_nul(obj) if NUL_ESCAPE in text else obj


def check_value(obj, text: str) -> None:
    """Raise `RecordError` when `obj` (decoded from, or encoded as, `text`) nests deeper than
    `MAX_DEPTH` or holds a lone surrogate. Only a line with that many brackets, or a surrogate
    escape, is walked: the hot path pays two counts and one search."""
    deep = text.count("{") + text.count("[") > MAX_DEPTH
    surrogates = _SURROGATE_ESCAPE.search(text) is not None
    if not (deep or surrogates):
        return
    # Only containers are pushed (a prompt's hundreds of pointers put it past the bracket count): a
    # scalar has no depth of its own, and its string is checked where its container is walked. `obj`
    # starts as the one item of a container of its own, so a bare scalar line is checked alike.
    stack = [((obj,), 0)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise RecordError(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            if surrogates and any(_has_surrogate(key) for key in value):
                raise RecordError(_SURROGATE_REASON)
            value = value.values()
        for item in value:
            if isinstance(item, (dict, list)):
                stack.append((item, depth + 1))
            elif surrogates and isinstance(item, str) and _has_surrogate(item):
                raise RecordError(_SURROGATE_REASON)


_SURROGATE_REASON = "a lone surrogate (\\ud800-\\udfff) in a string: not storable as UTF-8 text"


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def scrub_nul(value):
    """`value` with every NUL character in its strings and keys replaced by U+FFFD: PostgreSQL's text
    and jsonb columns refuse NUL, and a projection must not fail its chunk over one (a binary file's
    bytes can reach an archive preview). A new object; `value` is left as it was."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {scrub_nul(k): scrub_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_nul(v) for v in value]
    return value


# ---------------------------------------------------------------------------------------------
# What a record is


class Decoded(NamedTuple):
    """A stored object read: its Event type, its gg record (None for a host row), and the Event
    columns that depend on the record alone (``turn`` comes from the fold)."""

    type: str
    record: dict | None
    agent_id: str
    timestamp: str
    operation: str = ""
    tool_name: str = ""
    ok: bool | None = None
    failure: str = ""


def classify(obj: dict):
    """(event type, gg record or None) for a stored JSON object.

    A bare gg record is its own gg record; ``{"type": "gg", "event": {...}}`` carries one; any other
    host kind is typed ``host:<kind>`` and has none (stored, not projected). A type gg has never had
    is still a gg record (stored, projected only through its envelope). A ``type`` that is present
    and not a string is a `RecordError`.
    """
    t = _type_of(obj)
    if t == "gg":
        inner = obj.get("event")
        if isinstance(inner, dict):
            return _type_of(inner)[:TYPE_MAX], inner
        return "host:gg", None
    if t in HOST_KINDS and not (t == "usage" and isinstance(obj.get("tokens"), dict)):
        return "host:" + t, None
    return t[:TYPE_MAX], obj


def _type_of(rec: dict) -> str:
    t = rec.get("type")
    if t is None:
        return ""
    if not isinstance(t, str):
        raise RecordError(f"type is a JSON {json_kind(t)}, not a string")
    return t


def decode(obj: dict) -> Decoded:
    """What a stored object is, and its Event columns; raises `RecordError` (a non-string type)."""
    etype, rec = classify(obj)
    src = rec if rec is not None else obj
    agent_id = src.get("agentId")
    agent_id = as_text(agent_id) if agent_id else "root"
    ts = src.get("timestamp")
    if ts is None and rec is not None:
        ts = obj.get("timestamp")
    timestamp = as_text(ts, SHORT_MAX)
    if rec is None:
        return Decoded(etype, None, agent_id, timestamp)
    if etype == "api_call":
        return Decoded(etype, rec, agent_id, timestamp, operation=api_operation(rec))
    if etype == "api_result":
        return Decoded(etype, rec, agent_id, timestamp, operation=api_operation(rec), ok=_ok(rec),
                       failure=failure_class(rec))
    if etype == "tool_call":
        return Decoded(etype, rec, agent_id, timestamp, tool_name=as_text(rec.get("name")))
    if etype == "code_execution":  # its ok: the feed's failed-only filter finds failed programs by it
        return Decoded(etype, rec, agent_id, timestamp, ok=_ok(rec))
    if etype == "log":  # ok false at level "error" (a failed row): the failed-only filter reads it
        return Decoded(etype, rec, agent_id, timestamp, ok=log_level(rec) != "error")
    if etype == "tool_result":
        return Decoded(etype, rec, agent_id, timestamp, tool_name=as_text(rec.get("name")), ok=_ok(rec),
                       failure=failure_class(rec))
    return Decoded(etype, rec, agent_id, timestamp)


def _stored_object(raw):
    """(object, gg record or None) of a stored line, or (None, None) for a line no reader decodes.
    `raw` may be bytes (the gg binary's stdout)."""
    try:
        if isinstance(raw, (bytes, bytearray)):
            raw = bytes(raw).decode("utf-8")
        obj = loads_record(raw)
        if not isinstance(obj, dict):
            return None, None
        return obj, classify(obj)[1]
    except (ValueError, TypeError):  # RecordError and UnicodeDecodeError are ValueErrors
        return None, None


def gg_record(raw) -> dict:
    """The gg record of a stored line (unwrapping the host's ``{"type":"gg","event":…}``); ``{}`` for
    a host row or a line no reader can decode."""
    return _stored_object(raw)[1] or {}


def record_of(raw) -> dict:
    """What a stored line carries for its feed row: its gg record, or a host row's own object; ``{}``
    for a line no reader can decode."""
    obj, rec = _stored_object(raw)
    return (rec if rec is not None else obj) or {}


def json_kind(value) -> str:
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
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def log_level(rec: dict) -> str:
    """A `log` record's level ("info" when it names none)."""
    return str(rec.get("level") or "info")


def _ok(rec: dict):
    ok = rec.get("ok")
    return ok if isinstance(ok, bool) else None


def failure_class(rec: dict) -> str:
    """The failure class a result names ('' when none). Tolerates an object-shaped failure."""
    f = rec.get("failure")
    if f is None:
        return ""
    if isinstance(f, str):
        return f[:SHORT_MAX]
    if isinstance(f, dict):
        for key in ("class", "kind", "code", "type"):
            if isinstance(f.get(key), str):
                return f[key][:SHORT_MAX]
    return as_text(f, SHORT_MAX)


def api_operation(rec: dict) -> str:
    """``operation``; the legacy ``{object, function}`` pair reads ``object.function``."""
    op = rec.get("operation")
    if isinstance(op, str) and op:
        return op[:ID_MAX]
    obj, fn = rec.get("object"), rec.get("function")
    if isinstance(obj, str) and obj and isinstance(fn, str) and fn:
        return f"{obj}.{fn}"[:ID_MAX]
    if isinstance(fn, str) and fn:
        return fn[:ID_MAX]
    if isinstance(obj, str):
        return obj[:ID_MAX]
    return ""


def parse_timestamp(value):
    """gg's RFC 3339 stamp (nanoseconds allowed) -> aware datetime, or None.

    A stamp without an offset is read as UTC (gg writes UTC), so stamps can always be subtracted.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        # Trim a fraction longer than Python reads (older Pythons read at most 6 digits).
        head, dot, rest = value.partition(".")
        if not dot:
            return None
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def ms_between(start: str, end: str):
    """Milliseconds from stamp `start` to stamp `end` (float), or None when either cannot be read."""
    a, b = parse_timestamp(start), parse_timestamp(end)
    if a is None or b is None:
        return None
    return (b - a).total_seconds() * 1000


def whole_number(text) -> int | None:
    """`text` read as a whole number when it is ASCII digits alone and fits a 64-bit integer column
    (an id, seq or page in an address, a form or a store's id), else None. `str.isdigit` alone lets
    "²" and other digit characters through, which `int` refuses, and a 5,000-digit text that `int`
    refuses too (or a database cannot hold) is no address anyone wrote."""
    if not (isinstance(text, str) and text.isascii() and text.isdigit() and len(text) <= 19):
        return None
    n = int(text)
    return n if n < 2**63 else None


def finite_number(value) -> bool:
    """A JSON number (not a bool) that is finite as a double: an integer past a double's range is
    none, as a fraction past it reads as null (`_finite_float`)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:  # an integer of 309 digits or more
        return False


def clock(timestamp):
    """gg's RFC 3339 stamp "2026-07-24T04:34:39.0674579Z" -> "04:34:39.067"; anything else as written."""
    if not (len(timestamp) >= 19 and timestamp[10] == "T" and timestamp[13] == ":"):
        return timestamp
    digits = ""
    if timestamp[19:20] == ".":
        for ch in timestamp[20:23]:
            if not ch.isdigit():
                break
            digits += ch
    return f"{timestamp[11:19]}.{digits.ljust(3, '0')}"


def roster_module_id(row: dict, agent_id: str) -> str:
    """The store id an `agent_modules` row names ('' for none): its ``moduleId`` as text, or for an
    enabled row of a stream older than module ids the reference console's ``legacy:<agent>:<kind>``.
    The fold's preload and its handler read it through this one function, so they name the same store."""
    mid = row.get("moduleId")
    if mid is None and row.get("enabled") is True:
        mid = f"legacy:{agent_id}:{as_text(row.get('kind'), 32)}"[:ID_MAX]
    return as_text(mid)


def derive_role(tools, apis) -> str:
    """review / judge / standard, from the ending calls the surface offers (spec/stream.md §4.21)."""
    names = {t for t in as_list(tools) if isinstance(t, str)}
    ops = set()
    for api in as_list(apis):
        if isinstance(api, dict):
            for fn in as_list(api.get("functions")):
                if isinstance(fn, dict) and isinstance(fn.get("operation"), str):
                    ops.add(fn["operation"])
    if names & JUDGE_ENDINGS or any(op.endswith("select_winner") for op in ops):
        return "judge"
    if names & REVIEW_ENDINGS or ops & REVIEW_OPERATIONS:
        return "review"
    return "standard"


def worktree_outcome(rec: dict) -> str:
    """A worktree_merged record's outcome (spec/stream.md §7.5): merged, conflict or discarded."""
    if rec.get("merged") is True:
        return "merged"
    return "conflict" if rec.get("conflicts") is True else "discarded"
