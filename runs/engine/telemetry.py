"""Stamping gg envelopes and sending them through `runs.ingest.writer.append`, the one write path.

Records are buffered and flushed at the points a live reader needs them (each incarnation's
opening, each turn's close, the epilogue) and on the way out of a failure, so everything already
emitted reaches the database, a flush that failed included. A launched run is therefore stored
exactly like an imported one.
"""

from datetime import datetime, timezone

from runs.ingest import writer as ingest


def now_rfc3339():
    return datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Telemetry:
    def __init__(self, run, session_id, sink=None):
        self.run = run
        self.session_id = session_id
        self.buffer = []
        self.emitted = []  # every record, in order (the engine's own account; tests read it)
        self.sink = sink or (lambda records: ingest.append(run, records, dedupe=False))

    def emit(self, type_, agent=None, **fields):
        """One gg record: the envelope (timestamp, sessionId, agentId, parentAgentId, issueId)
        beside the type's own fields. Optional fields are omitted rather than written as null."""
        record = {"timestamp": now_rfc3339(), "sessionId": self.session_id}
        if agent is not None:
            record["agentId"] = agent.id
            if agent.parent_id:
                record["parentAgentId"] = agent.parent_id
            if agent.issue_id:
                record["issueId"] = agent.issue_id
        record["type"] = type_
        record.update({key: value for key, value in fields.items() if value is not None})
        self.buffer.append(record)
        self.emitted.append(record)
        return record

    def flush(self):
        # Records leave the buffer only once stored: a write that fails (the database locked past its
        # timeout, or restarting) keeps them for the next flush instead of dropping them. A write
        # path's chunk at a time, each stored whole or not at all, so a retry stores none twice.
        while self.buffer:
            records = self.buffer[:ingest.CHUNK_LINES]
            self.sink(records)
            del self.buffer[:len(records)]
