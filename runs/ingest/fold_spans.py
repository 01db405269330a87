"""The Timeline's projection (runs.models.timeline), folded per chunk from `runs.ingest.fold.fold`.

Per agent, a lane (`TimelineLane`) holds its first and last marks (turn, call and spawn records) and
its open turn and wait; a turn becomes a `TurnSpan` when the agent's next turn starts, a wait a
`WaitSpan` at the agent's next status. A closed turn, and every call and failed result as it comes,
is added to the agent's `TimelineBucket` of each level: rows merged by min, max, sum and (bitwise) or,
so the result does not depend on where chunk boundaries fall (incremental == rebuilt).

The rules are those the page drew from the log before (runs/pages/timeline.py): a turn runs from
its `turn_started` to its latest `turn_timing`, or, untimed, to the next turn's start (the open one:
to the lane's last moment); it is an error turn when a `turn_outcome` in it says error or fatal; a
call's tick is at its opening half, a failed result's (red) at the result; a blocked wait runs from
`agent_status` blocked to the agent's next status. A record whose stamp does not read draws nothing.
"""

from __future__ import annotations

from types import SimpleNamespace

from django.db import connection

from runs.ingest.fold_flush import in_chunks, insert_rows, update_rows
from runs.models import TimelineBucket, TimelineLane, TurnSpan, WaitSpan
from runs.models.timeline import LEVELS, epoch_ms, slot, tick_text
from runs.stream.record import parse_timestamp

CALLS = frozenset(("api_call", "tool_call"))
RESULTS = frozenset(("api_result", "tool_result"))
MARKS = frozenset(("turn_started", "turn_timing", "agent_spawned")) | CALLS | RESULTS  # a lane's first/last moments
FOLDED = MARKS | {"turn_outcome", "agent_status"}

_LANE_FIELDS = ["marked", "first_ms", "last_ms", "turn", "start_ms", "end_ms", "error", "calls", "failed", "ticks",
                "blocked_ms"]
_SPAN_FIELDS = ["agent_id", "turn", "start_ms", "end_ms", "error", "calls", "failed", "ticks"]
_BUCKET_FIELDS = ["turns", "first_turn", "last_turn", "start_ms", "end_ms", "error", "call_slots", "fail_slots"]


def fold(run, rows, turns) -> None:
    """Fold the chunk's `rows` (`FoldRow`s, with the turn the fold gave each) into the run's lanes."""
    todo = [(row.event, turn) for row, turn in zip(rows, turns)
            if row.event.record is not None and row.event.type in FOLDED]
    if not todo:
        return
    lanes = {lane.agent_id: lane for lane in
             in_chunks(TimelineLane.objects.filter(run=run), "agent_id", {e.agent_id for e, _ in todo})}
    new_lanes, spans, waits, buckets = [], [], [], _Buckets()
    for e, turn in todo:
        lane = lanes.get(e.agent_id)
        if lane is None:
            lane = lanes[e.agent_id] = TimelineLane(run=run, agent_id=e.agent_id)
            new_lanes.append(lane)
        ms, etype = epoch_ms(parse_timestamp(e.timestamp)), e.type
        if etype in MARKS:
            if not lane.marked:
                lane.marked, lane.first_ms = True, ms
            lane.last_ms = ms
        if etype == "turn_started" and turn:
            _close_turn(lane, ms, spans, buckets)
            lane.turn, lane.start_ms, lane.end_ms, lane.error = turn, ms, None, False
            lane.calls = lane.failed = 0
            lane.ticks = ""
        elif etype == "turn_timing":
            if lane.turn and ms is not None:
                lane.end_ms = ms
        elif etype in CALLS:
            lane.calls += 1
            _tick(lane, ms, False, buckets)
        elif etype in RESULTS:
            if e.ok is False:
                lane.failed += 1
                _tick(lane, ms, True, buckets)
        elif etype == "turn_outcome":
            if lane.turn and e.record.get("outcome") in ("error", "fatal"):
                lane.error = True
        elif ms is not None:  # agent_status
            if lane.blocked_ms is not None:
                waits.append(SimpleNamespace(agent_id=lane.agent_id, start_ms=lane.blocked_ms, end_ms=ms))
            lane.blocked_ms = ms if e.record.get("status") == "blocked" else None
    # One executemany a table, whatever the chunk holds (bulk_create would batch by SQLite's parameter limit).
    fresh = {lane.agent_id for lane in new_lanes}
    update_rows(TimelineLane, [lane for lane in lanes.values() if lane.agent_id not in fresh], _LANE_FIELDS)
    _insert(TimelineLane, new_lanes, ["agent_id", *_LANE_FIELDS], run)
    _insert(TurnSpan, spans, _SPAN_FIELDS, run)
    _insert(WaitSpan, waits, ["agent_id", "start_ms", "end_ms"], run)
    buckets.write(run)


def _insert(model, rows, fields, run, on_conflict="") -> None:
    if rows:
        insert_rows(model, rows, fields, run_id=run.pk, on_conflict=on_conflict)


def _tick(lane, ms, failed, buckets) -> None:
    if ms is None:
        return
    lane.ticks += tick_text(ms, failed)
    buckets.tick(lane.agent_id, ms, failed)
    if not lane.turn:  # before the first turn: a span of calls only, found by its moments like a turn
        lane.start_ms = ms if lane.start_ms is None else min(lane.start_ms, ms)
        lane.end_ms = ms if lane.end_ms is None else max(lane.end_ms, ms)


def _close_turn(lane, next_start, spans, buckets) -> None:
    """The lane's open turn as a span, now the agent's next one starts at `next_start`."""
    if not lane.turn and not lane.ticks:
        return
    start, end = lane.start_ms, lane.end_ms
    if lane.turn and start is not None and end is None:
        end = next_start if next_start is not None else start
    spans.append(SimpleNamespace(agent_id=lane.agent_id, turn=lane.turn, start_ms=start, end_ms=end,
                                 error=lane.error, calls=lane.calls, failed=lane.failed, ticks=lane.ticks))
    if lane.turn and start is not None:
        buckets.turn(lane.agent_id, lane.turn, start, end, lane.error)


class _Buckets:
    """The chunk's additions to the run's TimelineBuckets: {(agent, level, b): [the bucket's fields]}."""

    def __init__(self):
        self.rows = {}

    def _row(self, agent_id, level, ms):
        key = (agent_id, level, int(ms // (1 << level)))
        row = self.rows.get(key)
        if row is None:
            row = self.rows[key] = [0, None, None, None, None, False, 0, 0]
        return row

    def turn(self, agent_id, n, start, end, error) -> None:
        for level in LEVELS:
            _merge(self._row(agent_id, level, start), [1, n, n, start, end, error, 0, 0])

    def tick(self, agent_id, ms, failed) -> None:
        for level in LEVELS:
            self._row(agent_id, level, ms)[7 if failed else 6] |= slot(ms, level)

    def write(self, run) -> None:
        """Each row merged into its stored bucket by the database (one upsert a chunk, as `_merge` would):
        nothing is read. Read first, a chunk's buckets cost a fifth of its fold."""
        rows = [SimpleNamespace(agent_id=agent_id, level=level, b=b, **dict(zip(_BUCKET_FIELDS, add)))
                for (agent_id, level, b), add in self.rows.items()]
        _insert(TimelineBucket, rows, ["agent_id", "level", "b", *_BUCKET_FIELDS], run, _upsert())


def _upsert() -> str:
    """``ON CONFLICT`` on the bucket's key, merging as `_merge` does: written out in SQL both databases
    read alike (SQLite has no LEAST; its min() of a NULL is NULL)."""
    table = connection.ops.quote_name(TimelineBucket._meta.db_table)

    def pick(column, op):  # the stored value, or the new where the stored is NULL or the new wins
        old, new = f"{table}.{column}", f"excluded.{column}"
        return f"{column} = CASE WHEN {new} IS NULL OR {old} {op} {new} THEN {old} ELSE {new} END"

    merged = [f"turns = {table}.turns + excluded.turns", pick("first_turn", "<="), pick("last_turn", ">="),
              pick("start_ms", "<="), pick("end_ms", ">="), f"error = {table}.error OR excluded.error",
              f"call_slots = {table}.call_slots | excluded.call_slots",
              f"fail_slots = {table}.fail_slots | excluded.fail_slots"]
    return f" ON CONFLICT (run_id, level, b, agent_id) DO UPDATE SET {', '.join(merged)}"


def _merge(into, add) -> None:
    """Merge bucket fields `add` into `into` (lists in _BUCKET_FIELDS order)."""
    into[0] += add[0]
    for i, pick in ((1, min), (2, max), (3, min), (4, max)):
        if add[i] is not None:
            into[i] = add[i] if into[i] is None else pick(into[i], add[i])
    into[5] = into[5] or add[5]
    into[6] |= add[6]
    into[7] |= add[7]


def forget(run) -> None:
    """Empty the run's Timeline tables (the rebuild folds them again)."""
    for model in (TimelineLane, TurnSpan, WaitSpan, TimelineBucket):
        model.objects.filter(run=run).delete()
