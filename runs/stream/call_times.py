"""Call times and model time, kept by the fold (runs.ingest.fold; no database here) so the run report
never pairs a call's halves again.

A call's two halves pair per agent, turn, surface and operation or tool, first opened first closed
(runs.pages.calls.pair_calls, the same rule over the stored log); each result's row gets its call's
milliseconds (``Event.call_ms``; None for a result nothing opened, or a stamp that does not read).
``Agent.timing`` holds what pairing needs between chunks and the per-turn pooling of generated tokens
over model time (runs.pages.calls.generated_throughput, the same rule):

    {"turn": the turn "open" belongs to, "open": {"api|name": [opening stamps]},
     "calls": {"api|name": [calls (openings, and results nothing opened), failed results, timed results]},
     "tp": {"turn", "out", "ms": this turn's output tokens / requestMs (None until read),
            "tokens", "modelMs", "turns": summed over the closed turns that reported both}}

gg runs an agent's calls one at a time, so "open" stays small; a turn's openings are dropped with it
(no later result can pair with them: a result carries its own turn).
"""

from __future__ import annotations

from runs.stream.record import finite_number, ms_between
from runs.stream.usage import plus

SURFACES = {"api_call": "api", "api_result": "api", "tool_call": "tool", "tool_result": "tool"}
OPENINGS = ("api_call", "tool_call")


def call_times(agents: dict, rows, turns) -> list:
    """Per row (`FoldRow`s with the turn the fold gave each), its call's ms on a result, else None;
    updates each emitting agent's `timing` (the agents are the fold's, written with the rest)."""
    out = []
    for (_seq, e), turn in zip(rows, turns):
        surface = SURFACES.get(e.type)
        if e.record is None or (surface is None and e.type not in ("usage", "turn_timing")):
            out.append(None)
            continue
        timing = agents[e.agent_id].timing
        if surface is None:
            _model_time(timing, e.type, e.record, turn)
            out.append(None)
            continue
        if "open" not in timing or timing["turn"] != turn:
            timing["turn"], timing["open"] = turn, {}
        key = f"{surface}|{e.operation if surface == 'api' else e.tool_name}"
        counts = timing.setdefault("calls", {}).setdefault(key, [0, 0, 0])
        if e.type in OPENINGS:
            timing["open"].setdefault(key, []).append(e.timestamp)
            counts[0] += 1
            out.append(None)
            continue
        waiting = timing["open"].get(key)
        ms = None
        if waiting:
            opened = waiting.pop(0)
            if not waiting:
                del timing["open"][key]
            ms = ms_between(opened, e.timestamp)
        else:
            counts[0] += 1  # a result nothing opened is a call of its own
        counts[1] += e.ok is False
        counts[2] += ms is not None
        out.append(ms)
    return out


def _model_time(timing: dict, etype: str, rec: dict, turn) -> None:
    tp = timing.setdefault("tp", {"turn": turn, "out": None, "ms": None, "tokens": 0, "modelMs": 0, "turns": 0})
    if tp["turn"] != turn:
        _close_turn(tp)
        tp["turn"] = turn
    if etype == "usage":
        tokens = rec.get("tokens") if isinstance(rec.get("tokens"), dict) else {}
        if finite_number(tokens.get("output")):
            tp["out"] = plus(tp["out"], tokens["output"])
    elif finite_number(rec.get("requestMs")) and rec["requestMs"] > 0:
        tp["ms"] = rec["requestMs"]


def _close_turn(tp: dict) -> None:
    if tp["out"] is not None and tp["ms"] is not None:
        tp["tokens"] = plus(tp["tokens"], tp["out"])  # a sum past a double's range keeps the last (JSON has no inf)
        tp["modelMs"] = plus(tp["modelMs"], tp["ms"])
        tp["turns"] += 1
    tp["out"] = tp["ms"] = None


def pooled(timing: dict) -> dict:
    """An agent's generated tokens over model time so far: {tokens, ms, turns} (its open turn too)."""
    tp = dict(timing.get("tp") or {"out": None, "ms": None, "tokens": 0, "modelMs": 0, "turns": 0})
    _close_turn(tp)
    return {"tokens": tp["tokens"], "ms": tp["modelMs"], "turns": tp["turns"]}
