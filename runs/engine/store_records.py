"""The records a turn's store changes leave in the stream, within a budget.

gg records a store's whole state after each change (`tasks_state`, `memory_state`, ...; a memory's
`memory_revision` beside it). A program looping over a big store's mutations wrote a megabyte a call
into the log until the disk was full, and cancelling the run waited for the program's records; a
reply of many tool calls does the same. Past `MAX_BYTES` of them in one program (or one reply's tool
calls), a store's further changes are counted, and its state is recorded once more, as the turn
left it, when the turn ends.
"""

import json

MAX_BYTES = 4 * 1024 * 1024


class StoreRecords:
    def __init__(self, emit):
        self.emit = emit
        self.bytes = self.suppressed = 0
        self.held = set()  # the kinds of store whose state is recorded at the end

    def add(self, record, kind):
        size = len(json.dumps(record, ensure_ascii=False))
        if kind in self.held or self.bytes + size > MAX_BYTES:
            self.held.add(kind)
            self.suppressed += 1
            return
        self.bytes += size
        self.emit(record)

    def finish(self, log, store):
        """At the turn's end: say what was held, and record each held store as it stands."""
        if not self.held:
            return
        log("warn", f"{self.suppressed} further store record(s) past {MAX_BYTES // 2**20} MiB were not recorded; "
                    f"the state of {', '.join(sorted(self.held))} is recorded as the program left it")
        for kind in sorted(self.held):
            self.emit(store(kind).snapshot())
