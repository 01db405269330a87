"""Calls and time: each call's two halves paired, its duration, latency per operation and per tool,
and generated tokens per second pooled over model time.

Durations are differences of the stored gg timestamps (microseconds: Python reads a stamp to the
microsecond), never a clock of the console's. A call's halves are paired per agent and turn, first
opened first closed for one operation (gg runs an agent's calls one at a time; a delegation's child
subtree lands inside the bracket under the child's own agent id, so it never interleaves).
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass

from runs.models import Event, Run
from runs.stream.call_times import pooled
from runs.stream.record import finite_number, gg_record, ms_between

OPENING = {"api_call": "api_result", "tool_call": "tool_result"}
CLOSING = {v: k for k, v in OPENING.items()}
CALL_TYPES = tuple(OPENING) + tuple(CLOSING)
CALL_COLUMNS = ("seq", "type", "agent_id", "turn", "timestamp", "operation", "tool_name", "ok", "failure")


@dataclass
class Call:
    seq: int
    agent_id: str
    turn: int | None
    surface: str  # "api" | "tool"
    name: str  # the operation or the tool name
    timestamp: str
    result_seq: int | None = None
    result_timestamp: str = ""
    ok: bool | None = None
    failure: str = ""

    @property
    def duration_ms(self):
        return ms_between(self.timestamp, self.result_timestamp) if self.result_seq else None


def pair_calls(rows) -> list[Call]:
    """Calls (in opening order) from rows of CALL_COLUMNS in seq order, each with its result when
    one was stored. A result with no opening half is kept as a call of its own (no duration)."""
    calls, open_ = [], defaultdict(deque)  # (agent, turn, surface, name) -> calls awaiting a result
    for seq, etype, agent_id, turn, timestamp, operation, tool_name, ok, failure in rows:
        surface = "api" if etype.startswith("api_") else "tool"
        name = operation if surface == "api" else tool_name
        key = (agent_id, turn, surface, name)
        if etype in OPENING:
            call = Call(seq, agent_id, turn, surface, name, timestamp)
            calls.append(call)
            open_[key].append(call)
            continue
        waiting = open_.get(key)
        call = waiting.popleft() if waiting else None
        if call is None:
            call = Call(seq, agent_id, turn, surface, name, "")
            calls.append(call)
        call.result_seq, call.result_timestamp, call.ok, call.failure = seq, timestamp, ok, failure
    return calls


def call_rows(run: Run, **filters):
    """The call halves of a run (narrowed by Event `filters`), as rows for `pair_calls` (one query)."""
    return Event.objects.filter(run=run, type__in=CALL_TYPES, **filters).order_by("seq").values_list(*CALL_COLUMNS)


def other_half(run: Run, event: Event):
    """(seq of the event's other half or None, ms between the halves or None) for a call half."""
    if event.type not in CALL_TYPES:
        return None, None
    for call in pair_calls(call_rows(run, agent_id=event.agent_id, turn=event.turn)):
        if event.seq in (call.seq, call.result_seq):
            other = call.result_seq if event.seq == call.seq else (call.seq if call.timestamp else None)
            return other, call.duration_ms if other else None
    return None, None


def percentile(values, p):
    """The nearest-rank percentile of `values` (p in 0..100), or None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)]


def latency_table(calls) -> list[dict]:
    """Per (surface, operation or tool): count, failures, failure rate, p50 / p95 ms, most called
    first. Counted on the opening half (a lone result counts too, as gg's call did happen)."""
    groups = defaultdict(list)
    for call in calls:
        groups[(call.surface, call.name)].append(call)
    out = []
    for (surface, name), group in groups.items():
        durations = [c.duration_ms for c in group if c.duration_ms is not None]
        failures = sum(1 for c in group if c.ok is False)
        out.append({"surface": surface, "name": name, "count": len(group), "failures": failures,
                    "failure_rate": failures / len(group), "p50_ms": percentile(durations, 50),
                    "p95_ms": percentile(durations, 95), "timed": len(durations)})
    return sorted(out, key=lambda r: (-r["count"], r["surface"], r["name"]))


def generated_throughput(run: Run, **filters) -> dict:
    """Generated tokens per second pooled the way gg's console pools it: tokens over time inside
    model calls, never a mean of per-call rates. Per turn, the output tokens of its `usage` deltas
    and its model time (`turn_timing.requestMs`, which is `prompt.durationMs`); only turns that
    report both count. Reads the two small records per turn, not the prompts (one query).
    {"run": pooled over every agent, "agents": {agent_id: pooled}}, each
    {tokens, ms, turns, per_second (None without model time)}."""
    output, model_ms = defaultdict(int), {}
    rows = Event.objects.filter(run=run, type__in=("usage", "turn_timing"), **filters).values_list(
        "agent_id", "turn", "type", "raw")
    for agent_id, turn, etype, raw in rows.iterator(chunk_size=2000):
        rec = gg_record(raw)
        if etype == "usage":
            tokens = rec.get("tokens") if isinstance(rec.get("tokens"), dict) else {}
            if finite_number(tokens.get("output")):
                output[(agent_id, turn)] += tokens["output"]
        elif finite_number(rec.get("requestMs")) and rec["requestMs"] > 0:
            model_ms[(agent_id, turn)] = rec["requestMs"]
    both = [key for key in model_ms if key in output]
    by_agent = defaultdict(list)
    for key in both:
        by_agent[key[0]].append(key)
    return {"run": _pooled(both, output, model_ms),
            "agents": {agent_id: _pooled(keys, output, model_ms) for agent_id, keys in by_agent.items()}}


def _pooled(keys, output, model_ms):
    tokens, ms = sum(output[k] for k in keys), sum(model_ms[k] for k in keys)
    return _with_rate({"tokens": tokens, "ms": ms, "turns": len(keys)})


TIMING_PHASES = (("promptMs", "prompt"), ("requestMs", "request"), ("responseMs", "response"))


def timing_split(rec: dict) -> dict | None:
    """A turn_timing record as {phases: [(name, ms)], total} (gg's three phases partition the turn)."""
    if not rec:
        return None
    phases = [(name, rec.get(key)) for key, name in TIMING_PHASES]
    phases = [(name, v if finite_number(v) and v >= 0 else 0) for name, v in phases]
    return {"phases": phases, "total": sum(v for _, v in phases)}


def bucket_percentile(buckets: dict, p):
    """The nearest-rank percentile (p in 0..100) of counted values ({value as text: count}), or None."""
    total = sum(buckets.values())
    if not total:
        return None
    rank, seen = max(1, math.ceil(p / 100 * total)), 0
    for value, n in sorted((float(v), n) for v, n in buckets.items()):
        seen += n
        if seen >= rank:
            return value
    return None


def run_latency(agents) -> dict:
    """{"run": latency_table over every call, "agents": {agent_id: latency_table}} off what the fold
    keeps in the agents' `timing` (`agents`: the run's Agents; no query): the calls, failures and
    timed calls per agent and operation or tool, and the nearest-rank p50 and p95 over its timed
    calls' milliseconds counted to three significant figures (runs.stream.call_times), so the
    report reads as many rows for a million calls as for ten."""
    groups = defaultdict(lambda: {"count": 0, "failures": 0, "timed": 0, "ms": defaultdict(int)})
    for agent in agents:
        times = agent.timing.get("ms") or {}
        for key, (n, failed, timed) in (agent.timing.get("calls") or {}).items():
            surface, name = key.split("|", 1)
            for g in (groups[(agent.agent_id, surface, name)], groups[(None, surface, name)]):
                g["count"] += n
                g["failures"] += failed
                g["timed"] += timed
                for value, k in (times.get(key) or {}).items():
                    g["ms"][value] += k
    tables = defaultdict(list)
    for (agent_id, surface, name), g in groups.items():
        if not g["count"]:
            continue
        ms = g.pop("ms")
        tables[agent_id].append({"surface": surface, "name": name, **g, "failure_rate": g["failures"] / g["count"],
                                 "p50_ms": bucket_percentile(ms, 50), "p95_ms": bucket_percentile(ms, 95)})
    order = lambda r: (-r["count"], r["surface"], r["name"])  # noqa: E731
    return {"run": sorted(tables.pop(None, []), key=order),
            "agents": {agent_id: sorted(rows, key=order) for agent_id, rows in tables.items()}}


def run_throughput(agents) -> dict:
    """`generated_throughput` of a whole run off the fold's per-agent pooling (`Agent.timing`): no query."""
    mine = {a.agent_id: pooled(a.timing) for a in agents}
    every = {k: sum(p[k] for p in mine.values()) for k in ("tokens", "ms", "turns")}
    return {"run": _with_rate(every), "agents": {a: _with_rate(p) for a, p in mine.items() if p["turns"]}}


def _with_rate(p):
    return {**p, "per_second": p["tokens"] / (p["ms"] / 1000) if p["ms"] else None}


def latency_doc(table) -> list[dict]:
    """A latency table as the report writes it (camelCase, milliseconds)."""
    return [{"surface": r["surface"], "name": r["name"], "count": r["count"], "failures": r["failures"],
             "failureRate": r["failure_rate"], "p50Ms": r["p50_ms"], "p95Ms": r["p95_ms"], "timed": r["timed"]}
            for r in table]
