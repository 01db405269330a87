"""A small model-price table: USD per million tokens of each class, used to price tokens where the
stream carries no cost, and to split a cost per token class (console.md §1.3 "Cost widget").

`settings.GG_MODEL_PRICES` overrides or extends it per model (README "Model prices"); a key ending
in `/*` prices every model of that vendor; a model with no entry is not priced (never a guess).
Figures priced here are estimates, and the pages say so.
"""

from __future__ import annotations

from django.conf import settings

from runs.stream.usage import num

PRICE_CLASSES = ("input", "cached", "output", "reasoning")
# The stream's token classes, as priced.
TOKEN_PRICE_CLASS = {"uncachedInput": "input", "cachedInput": "cached", "output": "output", "reasoning": "reasoning"}

# List prices (OpenRouter, late 2026), USD per million tokens. Reasoning is billed as output.
DEFAULT_MODEL_PRICES = {
    "anthropic/claude-opus-4": {"input": 15.0, "cached": 1.5, "output": 75.0, "reasoning": 75.0},
    "anthropic/claude-sonnet-4": {"input": 3.0, "cached": 0.3, "output": 15.0, "reasoning": 15.0},
    "anthropic/claude-3.5-haiku": {"input": 0.8, "cached": 0.08, "output": 4.0, "reasoning": 4.0},
    "openai/gpt-4.1": {"input": 2.0, "cached": 0.5, "output": 8.0, "reasoning": 8.0},
    "openai/gpt-4o": {"input": 2.5, "cached": 1.25, "output": 10.0, "reasoning": 10.0},
    "openai/gpt-4o-mini": {"input": 0.15, "cached": 0.075, "output": 0.6, "reasoning": 0.6},
    "openai/o3": {"input": 2.0, "cached": 0.5, "output": 8.0, "reasoning": 8.0},
    "google/gemini-2.5-pro": {"input": 1.25, "cached": 0.31, "output": 10.0, "reasoning": 10.0},
    "google/gemini-2.5-flash": {"input": 0.3, "cached": 0.075, "output": 2.5, "reasoning": 2.5},
    "deepseek/deepseek-chat": {"input": 0.27, "cached": 0.07, "output": 1.1, "reasoning": 1.1},
    "mock/*": {"input": 0.0, "cached": 0.0, "output": 0.0, "reasoning": 0.0},  # gg's offline scripted client
}


def model_prices() -> dict[str, dict]:
    """The table in force: the defaults, each model overridden or added by settings.GG_MODEL_PRICES."""
    table = dict(DEFAULT_MODEL_PRICES)
    for model, prices in (getattr(settings, "GG_MODEL_PRICES", None) or {}).items():
        if isinstance(prices, dict):
            table[str(model)] = {c: num(prices.get(c)) for c in PRICE_CLASSES}
    return table


def price_for(model_id: str, table: dict | None = None) -> dict | None:
    """The model's prices per class (a class may be None: not priced), or None for no entry."""
    table = model_prices() if table is None else table
    if model_id in table:
        return table[model_id]
    vendor = model_id.split("/", 1)[0] if "/" in (model_id or "") else None
    return table.get(f"{vendor}/*") if vendor else None


def price_tokens(tokens: dict | None, model_id: str, table: dict | None = None) -> dict | None:
    """{input, cached, output, reasoning, total} in USD for a token record (a class the stream did
    not report, or the table does not price, is None and left out of the total); None when the
    model has no price."""
    prices = price_for(model_id, table)
    if prices is None or not isinstance(tokens, dict):
        return None
    out, total = {}, None
    for token_class, price_class in TOKEN_PRICE_CLASS.items():
        n, price = num(tokens.get(token_class)), num(prices.get(price_class))
        out[price_class] = None if n is None or price is None else n * price / 1_000_000
        if out[price_class] is not None:
            total = out[price_class] + (total or 0)
    out["total"] = total
    return out
