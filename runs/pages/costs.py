"""Cost and tokens (issue 20, "Cost and tokens"), from the usage projections alone: each slot's and
model's spend — the stream's own cost where it carries one, else its tokens priced from the
model-price table (runs.stream.prices), marked estimated — the cost split per token class (always
priced, so always estimated), the cached share of input and the reasoning share of generated
tokens, and each instance's spend. Tests: tests/pages/test_costs_rates.py.
"""

from __future__ import annotations

from collections import defaultdict

from runs.models import Agent, Run
from runs.pages.run_selectors import run_usage
from runs.stream.prices import PRICE_CLASSES, model_prices, price_tokens
from runs.stream.usage import TOKEN_CLASSES, num


def spend(usage: dict | None, model_id: str, table: dict) -> dict:
    """{cost, estimated, classes}: the stream's comparable cost, or — when it carries none — the
    tokens priced for `model_id`; `classes` is the priced split ({input, cached, output, reasoning,
    total}) or None for a model without a price."""
    usage = _dict(usage)
    priced = price_tokens(usage.get("tokens"), model_id, table)
    stream = num(_dict(usage.get("cost")).get("comparable"))
    if stream is not None:
        return {"cost": stream, "estimated": False, "classes": priced}
    total = priced["total"] if priced else None
    return {"cost": total, "estimated": total is not None, "classes": priced}


def agent_spend(agent: Agent, table: dict | None = None) -> dict:
    return spend(agent.usage, agent.model_id, model_prices() if table is None else table)


def _share(part, whole):
    return part / whole if part is not None and whole else None


def token_shares(tokens: dict) -> dict:
    """The cached share of input (cached over cached + uncached) and the reasoning share of
    generated tokens (reasoning over output + reasoning); None where nothing was reported."""
    t = {c: num(_dict(tokens).get(c)) for c in TOKEN_CLASSES}
    cached, uncached, output, reasoning = (t["cachedInput"], t["uncachedInput"], t["output"], t["reasoning"])
    return {"cached": _share(cached or 0, (cached or 0) + (uncached or 0)) if cached is not None else None,
            "reasoning": _share(reasoning or 0, (reasoning or 0) + (output or 0)) if reasoning is not None else None}


def run_costs(run: Run) -> dict:
    """The run's cost widget: {total, estimated, classes: [(class, usd)], input_usd, output_usd,
    by_slot, by_model (each {label, model, cost, estimated, share, tokens}), shares, unpriced}."""
    table = model_prices()
    usage = run_usage(run)
    slots, models = [], defaultdict(lambda: {"cost": None, "estimated": False, "tokens": {}})
    classes = {c: None for c in PRICE_CLASSES}
    unpriced = set()
    for row in usage["by_slot"]:
        row = _dict(row)
        model = str(row.get("modelId") or "")
        s = spend(row, model, table)
        slots.append({"label": str(row.get("profileId") or "—"), "model": model, **s})
        m = models[model]
        if s["cost"] is not None:
            m["cost"] = (m["cost"] or 0) + s["cost"]
            m["estimated"] = m["estimated"] or s["estimated"]
        for c in TOKEN_CLASSES:
            v = num(_dict(row.get("tokens")).get(c))
            if v is not None:
                m["tokens"][c] = m["tokens"].get(c, 0) + v
        if s["classes"] is None:
            unpriced.add(model or "usage naming no model")
        else:
            for c in PRICE_CLASSES:
                if s["classes"][c] is not None:
                    classes[c] = (classes[c] or 0) + s["classes"][c]
    costs = [s["cost"] for s in slots if s["cost"] is not None]
    total = sum(costs) if costs else None
    by_model = [{"label": model or "—", "model": model, **m} for model, m in sorted(models.items())]
    for row in slots + by_model:
        row["share"] = _share(row["cost"], total)
    return {"total": total, "estimated": any(s["estimated"] for s in slots), "source": usage["source"],
            "classes": list(classes.items()),
            "input_usd": _sum(classes["input"], classes["cached"]), "output_usd": _sum(classes["output"], classes["reasoning"]),
            "by_slot": sorted(slots, key=lambda r: -(r["cost"] or 0)),
            "by_model": sorted(by_model, key=lambda r: -(r["cost"] or 0)),
            "shares": token_shares(usage["tokens"]), "unpriced": sorted(unpriced)}


def _sum(*values):
    values = [v for v in values if v is not None]
    return sum(values) if values else None


def _dict(value) -> dict:
    return value if isinstance(value, dict) else {}
