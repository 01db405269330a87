"""Stamping gg envelopes and sending them through `runs.ingest.writer.append`, the one write path.

Records are buffered, a write path's chunk at a time, and flushed before anything that can take
long (each model call, each program, each shell command or hook, an incarnation's opening, the
epilogue), half a second after the last flush at the latest while records keep coming, and on the
way out of a failure: everything already emitted reaches the database, a flush that failed
included, and a live reader sees a turn while it runs. A launched run is therefore stored exactly
like an imported one.

Every record fits the write path's line (1 MiB of compact JSON): model- and operator-sized text is
bounded where they are told (a memory's body, the task, a finish summary), and what still comes
over it (a reply's 2 MB `write_file` contents in its `tool_call`) has its longest strings shortened,
saying so in a `warn` log, rather than being stored as a rejected line the run's log is missing.
"""

import json
import logging
import time
from datetime import datetime, timezone

from runs.ingest import writer as ingest
from runs.ingest.lines import RECORD_ENCODER  # as the write path stores a record

log = logging.getLogger(__name__)

FLUSH_SECS = 0.5  # the longest a record waits while others keep coming (the feed's row lag budget is 1 s)
KEPT_CHARS = 1024  # a shortened string keeps at least this much; ids, names and enum words are never cut


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _size(text):
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _strings(value, path=""):
    """(path, container, key) of each string value under `value`."""
    pairs = value.items() if isinstance(value, dict) else enumerate(value)
    for key, item in pairs:
        where = f"{path}.{key}".removeprefix(".") if isinstance(value, dict) else f"{path}[{key}]"
        if isinstance(item, str):
            yield where, value, key
        elif isinstance(item, (dict, list)):
            yield from _strings(item, where)


def fit(record, limit=ingest.MAX_LINE_BYTES):
    """(record, cuts): `record` within `limit` bytes, its longest strings shortened (in a copy: the
    engine's own values stay whole), cuts [(path, characters, kept)]; record None when cutting
    strings cannot bring it within (a list of a million short strings)."""
    try:
        text = RECORD_ENCODER.encode(record)
    except (TypeError, ValueError, RecursionError):
        return record, []  # not JSON: the write path says so, as a rejected line
    size = _size(text)
    if size <= limit:
        return record, []
    record, cuts = json.loads(text), []
    for where, holder, key in sorted(_strings(record), key=lambda s: -len(s[1][s[2]])):
        value = holder[key]
        if size <= limit or len(value) <= 2 * KEPT_CHARS:
            break
        keep = max(KEPT_CHARS, len(value) - (size - limit) - 64)  # each character cut is a byte or more
        holder[key] = value[:keep] + f"… [{len(value) - keep:,} characters not recorded]"
        size -= _size(RECORD_ENCODER.encode(value)) - _size(RECORD_ENCODER.encode(holder[key]))
        cuts.append((where, len(value), keep))
    return (record if size <= limit else None), cuts


class Telemetry:
    flush_secs = FLUSH_SECS

    def __init__(self, run, session_id, sink=None):
        self.run = run
        self.session_id = session_id
        self.buffer = []
        self.flushed_at = time.monotonic()
        self.emitted = []  # every record, in order (the engine's own account; tests read it)
        self.sink = sink or (lambda records: ingest.append(run, records, dedupe=False))

    def emit(self, type_, agent=None, **fields):
        """One gg record: the envelope (timestamp, sessionId, agentId, parentAgentId, issueId)
        beside the type's own fields. Optional fields are omitted rather than written as null."""
        record, cuts = fit(self._stamp(type_, agent, fields))
        if record is None:
            record = self._stamp("log", agent, {"level": "error", "message": f"a {type_} record was over the write "
                                                "path's 1 MiB line however its strings were cut; it was not recorded"})
        self._keep(record)
        if cuts:
            shown = ", ".join(f"{where} from {chars:,} to {kept:,} characters" for where, chars, kept in cuts[:5])
            more = f" and {len(cuts) - 5} more string(s)" if len(cuts) > 5 else ""
            self._keep(self._stamp("log", agent, {"level": "warn", "message": f"the {type_} record was over the "
                                                  f"write path's 1 MiB line; shortened: {shown}{more}"}))
        # Each full chunk, or in time: after a failed flush the next try waits as long (a busy database's
        # timeout is seconds), never at every record.
        if len(self.buffer) % ingest.CHUNK_LINES == 0 or time.monotonic() - self.flushed_at >= self.flush_secs:
            self.flush(quiet=True)
        return record

    def _stamp(self, type_, agent, fields):
        record = {"timestamp": now_rfc3339(), "sessionId": self.session_id}
        if agent is not None:
            record["agentId"] = agent.id
            if agent.parent_id:
                record["parentAgentId"] = agent.parent_id
            if agent.issue_id:
                record["issueId"] = agent.issue_id
        record["type"] = type_
        record.update({key: value for key, value in fields.items() if value is not None})
        return record

    def _keep(self, record):
        self.buffer.append(record)
        self.emitted.append(record)

    def flush(self, quiet=False):
        """Store the buffered records. `quiet` inside a call (a shell, an emit): a failure is logged
        and the records wait for the next flush, whose failure (or RunGone) the run loop meets."""
        # Records leave the buffer only once stored: a write that fails (the database locked past its
        # timeout, or restarting) keeps them for the next flush instead of dropping them. A write
        # path's chunk at a time, each stored whole or not at all, so a retry stores none twice.
        self.flushed_at = time.monotonic()
        try:
            while self.buffer:
                records = self.buffer[:ingest.CHUNK_LINES]
                self.sink(records)
                del self.buffer[:len(records)]
        except Exception:
            if not quiet:
                raise
            log.warning("run %s: %d record(s) wait for the next flush", self.session_id, len(self.buffer),
                        exc_info=True)
