"""Usage arithmetic (null-aware: a token class stays null until reported) and the token figure.

A sum past a double's range keeps its previous value: no projection row ever holds an infinity.
"""

from __future__ import annotations

import math

from runs.stream.record import as_list, as_text
from runs.stream.vocabulary import SHORT_MAX

TOKEN_CLASSES = ("uncachedInput", "cachedInput", "output", "reasoning")
COST_CLASSES = ("comparable", "actual")


def num(value):
    """`value` when it is a JSON number (not a boolean), else None."""
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def plus(prev, value):
    """prev + value (prev may be None); a sum past a double's range keeps prev (never an infinity)."""
    total = value if prev is None else prev + value
    return total if not isinstance(total, float) or math.isfinite(total) else prev


def total(values):
    out = 0
    for v in values:
        out = plus(out, v)
    return out


def bump(counter: dict, key: str, n: int = 1) -> None:
    counter[key] = plus(counter.get(key, 0), n)


def empty_usage() -> dict:
    return {"tokens": {c: None for c in TOKEN_CLASSES}, "cost": {c: None for c in COST_CLASSES}, "deltas": 0}


def add_usage(acc: dict, tokens, cost) -> None:
    """Add one delta into `acc` (shape of `empty_usage`). A class stays null until reported."""
    if not acc:
        acc.update(empty_usage())
    acc_tokens = acc.setdefault("tokens", {c: None for c in TOKEN_CLASSES})
    if isinstance(tokens, dict):
        for c in TOKEN_CLASSES:
            v = num(tokens.get(c))
            if v is not None:
                acc_tokens[c] = plus(acc_tokens.get(c), v)
    acc_cost = acc.setdefault("cost", {c: None for c in COST_CLASSES})
    if isinstance(cost, dict):
        for c in COST_CLASSES:
            v = num(cost.get(c))
            if v is not None:
                summed = plus(acc_cost.get(c), v)
                acc_cost[c] = round(summed, 12) if summed is not None else None
    acc["deltas"] = acc.get("deltas", 0) + 1


def total_tokens(tokens: dict | None):
    """Sum of the four reported classes, reasoning included (as gg's header adds them), or None."""
    if not tokens:
        return None
    vals = [tokens.get(c) for c in TOKEN_CLASSES]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return sum(vals) if vals else None


def breakdown_bands(rec: dict) -> dict:
    """A context_breakdown's ``bySource`` as {band: tokens}: a band listed twice is summed, an empty
    band left out (a missing band reads as 0, spec/stream.md §4.13)."""
    out = {}
    for row in as_list(rec.get("bySource")):
        if isinstance(row, dict) and num(row.get("tokens")):
            source = as_text(row.get("source"), SHORT_MAX)
            out[source] = plus(out.get(source, 0), row["tokens"])
    return out


def format_tokens(value, missing="—") -> str:
    """A token count as gg's console prints it, on the feed and the pages alike: 950 -> "950",
    1500 -> "1.5k", 12345 -> "12.3k", 2500000 -> "2.5M"; not reported -> `missing` (never 0)."""
    if value is None or value == "":
        return missing
    try:
        n = float(value)
    except (TypeError, ValueError, OverflowError):  # not a number, or an int past a float's range
        return str(value)
    if not math.isfinite(n):
        return str(value)
    if abs(n) >= 999_950:
        return f"{n / 1_000_000:,.1f}M"
    if abs(n) >= 1000:
        return f"{n / 1000:.1f}k"
    return f"{int(n)}" if n == int(n) else f"{n:.1f}"
