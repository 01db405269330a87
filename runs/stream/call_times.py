"""Call times and model time, kept by the fold (runs.ingest.fold; no database here) so the run report
never pairs a call's halves again.

A call's two halves pair per agent, turn, surface and operation or tool, first opened first closed
(runs.pages.calls.pair_calls, the same rule over the stored log); each result's row gets its call's
milliseconds (``Event.call_ms``; None for a result nothing opened, or a stamp that does not read).
``Agent.timing`` holds what pairing needs between chunks and the per-turn pooling of generated tokens
over model time (runs.pages.calls.generated_throughput, the same rule):

    {"turn": the turn "open" belongs to, "open": {"api|name": [opening stamps]},
     "calls": {"api|name": [calls (openings, and results nothing opened), failed results, timed results]},
     "ms": {"api|name": {a timed result's ms to three significant figures: how many}},
     "tp": {"turn", "out", "ms": this turn's output tokens / requestMs (None until read),
            "tokens", "modelMs", "turns": summed over the closed turns that reported both,
            "outs": {model: this turn's output tokens}, "model": the model of its latest usage,
            "models": {model: [tokens, modelMs, turns]}}}

Per model, gg pools by each `usage` record's model (`modelId`; the agent's own model where the record
names none): a turn's output tokens go to the model each delta names, and its model time to the model
of the turn's latest delta — its own model call, which follows any compaction's at the top of the turn.

"ms" is what the report's p50 / p95 read: a fixed number of keys per operation whatever the run's
length (at most 900 per power of ten), and a nearest-rank percentile over it is the exact one rounded
to three significant figures (rounding keeps the order).

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
        if ms is not None:
            counts[2] += 1
            fold_ms(timing, key, ms)
        out.append(ms)
    return out


def fold_ms(timing: dict, key: str, ms: float) -> None:
    """Count one timed call of `key` ("api|name") in the agent's `timing["ms"]`."""
    buckets = timing.setdefault("ms", {}).setdefault(key, {})
    value = f"{float(f'{ms:.3g}'):g}"
    buckets[value] = buckets.get(value, 0) + 1


def _model_time(timing: dict, etype: str, rec: dict, turn) -> None:
    tp = timing.setdefault("tp", {"turn": turn, "out": None, "ms": None, "tokens": 0, "modelMs": 0, "turns": 0})
    if tp["turn"] != turn:
        _close_turn(tp)
        tp["turn"] = turn
    if etype == "usage":
        tokens = rec.get("tokens") if isinstance(rec.get("tokens"), dict) else {}
        # "" = the agent's model, read when the figures are (a spawn may name it after its first usage)
        model = rec.get("modelId") if isinstance(rec.get("modelId"), str) else ""
        tp["model"] = model
        if finite_number(tokens.get("output")):
            tp["out"] = plus(tp["out"], tokens["output"])
            outs = tp.setdefault("outs", {})
            outs[model] = plus(outs.get(model), tokens["output"])
    elif finite_number(rec.get("requestMs")) and rec["requestMs"] > 0:
        tp["ms"] = rec["requestMs"]


def _close_turn(tp: dict) -> None:
    if tp["out"] is not None and tp["ms"] is not None:
        tp["tokens"] = plus(tp["tokens"], tp["out"])  # a sum past a double's range keeps the last (JSON has no inf)
        tp["modelMs"] = plus(tp["modelMs"], tp["ms"])
        tp["turns"] += 1
        models = tp.setdefault("models", {})
        for model, out in tp.get("outs", {}).items():
            figures = models.setdefault(model, [0, 0, 0])
            figures[0] = plus(figures[0], out)
        timed = models.setdefault(tp.get("model") or "", [0, 0, 0])
        timed[1], timed[2] = plus(timed[1], tp["ms"]), timed[2] + 1
    tp["out"] = tp["ms"] = None
    tp.pop("outs", None)


def pooled(timing: dict) -> dict:
    """An agent's generated tokens over model time so far: {tokens, ms, turns} (its open turn too)."""
    return _whole(_closed(timing))


def _whole(tp: dict) -> dict:
    return {"tokens": tp["tokens"], "ms": tp["modelMs"], "turns": tp["turns"]}


def pools(timing: dict, agent_model: str) -> tuple[dict, dict]:
    """(`pooled`, the same per usage model: {model: {tokens, ms, turns}}), the open turn closed once
    for both. A delta naming no model counts as the agent's (`agent_model`; "" when it has none);
    timing folded before models were kept reads as the agent's."""
    tp = _closed(timing)
    whole = _whole(tp)
    if not {"model", "models"} & set(timing.get("tp") or {}):
        return whole, ({agent_model: whole} if whole["turns"] else {})
    out = {}
    for model, (tokens, ms, turns) in tp.get("models", {}).items():
        acc = out.setdefault(model or agent_model, {"tokens": 0, "ms": 0, "turns": 0})
        acc["tokens"], acc["ms"], acc["turns"] = plus(acc["tokens"], tokens), plus(acc["ms"], ms), acc["turns"] + turns
    return whole, out


def _closed(timing: dict) -> dict:
    """A copy of the agent's pooling with its open turn closed (the stored one is left as it is).
    Closing writes the copy's figures and its models' lists, and only reads the rest: copying those
    alone, where a deep copy was 0.6 of the Overview's 1.1 s on 12,747 agents."""
    tp = dict(timing.get("tp") or {"out": None, "ms": None, "tokens": 0, "modelMs": 0, "turns": 0})
    if "models" in tp:
        tp["models"] = {model: list(figures) for model, figures in tp["models"].items()}
    _close_turn(tp)
    return tp
