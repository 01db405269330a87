"""What material cost (spec/stream.md §7.6, gg's context spend): each turn's reported input tokens
(uncached + cached) and their cost are split across that turn's window — its `prompt`'s request
pointers — in proportion to each pooled message's estimated tokens, and summed over every turn a
message stays resident: gg bills residency, not arrival. Only input is attributed.

The fold bills each window as it arrives (runs.ingest.fold_pool); the turn page splits one turn the
same way. Pure functions, no database.

A message's share of a prompt is its size times one factor per prompt (`factor`), so while it stays in
consecutive prompts its bill is its size times the sum of their factors: the fold keeps, per agent, a
ledger head of those running sums (`HEAD`) and, on a resident message, the head as it entered
(`settle` adds what it has been billed since).
"""

from __future__ import annotations

from math import isfinite

from runs.stream.prices import price_tokens
from runs.stream.usage import num, plus

# An agent's ledger head: the sums over its prompts so far of the size factor and of the cost factor
# (priced prompts only), how many prompts were priced and how many of those estimated, and the turn
# of its latest prompt.
HEAD = {"factor": 0.0, "cost": 0.0, "priced": 0, "estimated": 0, "turn": None}


def reported_input(tokens) -> float | None:
    """A turn's input tokens as the provider reported them (uncached + cached), or None."""
    if not isinstance(tokens, dict):
        return None
    parts = [num(tokens.get(c)) for c in ("uncachedInput", "cachedInput")]
    parts = [p for p in parts if p is not None]
    return sum(parts) if parts else None


def turn_input_cost(tokens, cost, model_id: str, table: dict) -> tuple[float | None, bool]:
    """(USD of the turn's input, estimated): the stream's cost when the call generated nothing (all of
    it is input's), else its input share by the model's prices; with no stream cost, the input priced
    from the table (estimated); (None, False) when neither says."""
    stream = num(cost.get("comparable")) if isinstance(cost, dict) else None
    priced = price_tokens(tokens, model_id, table)
    priced_input = None
    if priced is not None and (priced["input"] is not None or priced["cached"] is not None):
        priced_input = (priced["input"] or 0) + (priced["cached"] or 0)
    if stream is not None:
        generated = [num(tokens.get(c)) for c in ("output", "reasoning")] if isinstance(tokens, dict) else []
        if not any(generated):
            return stream, False
        if priced_input is not None and priced["total"]:
            return stream * priced_input / priced["total"], True
        return None, False
    return (priced_input, True) if priced_input is not None else (None, False)


def split(sizes: list, reported: float | None) -> tuple[list[float], float]:
    """([billed tokens per item], unattributed): `reported` input spread over the items by their
    estimated sizes (an item never defined, size None, gets nothing); with no reported input each
    item is billed its own estimate. Nothing is dropped: input no item can carry is unattributed."""
    known = [s if isinstance(s, (int, float)) and s > 0 else 0 for s in sizes]
    whole = sum(known)
    if reported is None:
        return [float(s) for s in known], 0.0
    if not whole:
        return [0.0] * len(sizes), float(reported)
    return [reported * s / whole for s in known], 0.0


def factor(reported: float | None, known: float) -> float:
    """What `split` bills an item per token of its size (`known`: the sum of the items' sizes): its
    share is its size times this."""
    if reported is None:
        return 1.0
    return reported / known if known else 0.0


def settle(billed, cost, estimated, spans, weight, since, head):
    """(billed, cost, estimated, spans) of a message with what it was billed from the ledger head
    `since` (as it entered: [factor, cost, priced, estimated]) to `head`, its weight (its size times
    its pointers in each of those prompts) billed each; a message not resident (weight None) as is."""
    if weight is None:
        return billed, cost, estimated, spans
    if isfinite(total := billed + weight * (head["factor"] - since[0])):
        billed = total
    if head["priced"] > since[2]:
        cost = plus(cost or 0, weight * (head["cost"] - since[1]))
    estimated = estimated or head["estimated"] > since[3]
    if spans and spans[-1][1] < head["turn"]:
        spans = [*spans[:-1], [spans[-1][0], head["turn"]]]
    return billed, cost, estimated, spans


def enter(spans: list, turn: int) -> bool:
    """Mark the message resident at `turn` in its spans ([[first, last]], consecutive runs); False
    when it already was (a second model call in one turn bills again but is not another turn)."""
    if spans and spans[-1][1] >= turn:
        return False
    if spans and spans[-1][1] == turn - 1:
        spans[-1][1] = turn
    else:
        spans.append([turn, turn])
    return True


def resident_turns(spans, upto: int | None = None) -> int:
    """How many turns the spans cover (up to and including `upto`, if given)."""
    n = 0
    for first, last in spans or ():
        if upto is not None:
            last = min(last, upto)
        if last >= first:
            n += last - first + 1
    return n
