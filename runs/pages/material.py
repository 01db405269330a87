"""The message log and what material cost (spec/stream.md §4.14, §4.15, §7.6; console.md "Requests"),
and the context graph's compaction markers and fullness meter (console.md §1.8).

A turn's window is its `prompt`'s pointers, in order, joined to the agent's pool rows the fold keeps
(runs.ingest.fold_pool): one query for the window, however long the run. Each item's share of the
turn is split the way the fold billed it (runs.stream.material). The agent's costliest material is
its pool rows ranked by billed tokens, a resident row's with what its agent's ledger head adds
(runs.stream.material.settle). Tests: tests/pages/test_message_log.py, test_material_figures.py.
"""

from __future__ import annotations

from runs.models import Agent, Event, PooledMessage, Run
from runs.stream.material import reported_input, resident_turns, settle, split, turn_input_cost
from runs.stream.prices import model_prices
from runs.stream.record import as_list, gg_record
from runs.stream.usage import num

MATERIAL_SHOWN = 15  # the agent page's costliest items
VIEWS_SHOWN = 10  # and its costliest views
POOL_COLUMNS = ("message_id", "role", "label", "band", "tool", "tokens", "seq", "spans", "billed", "cost", "estimated",
                "weight", "since_factor", "since_cost", "since_priced", "since_estimated")


def _pool_row(values, head) -> dict:
    """A pool row as a page shows it: its bill up to its agent's ledger `head`."""
    row = dict(zip(POOL_COLUMNS, values))
    since = (row["since_factor"], row["since_cost"], row["since_priced"], row["since_estimated"])
    row["billed"], row["cost"], row["estimated"], spans = settle(
        row["billed"], row["cost"], row["estimated"], row["spans"] or [], row["weight"], since, head)
    row["spans"] = spans
    row["arrived"] = spans[0][0] if spans else None
    row["resident"] = resident_turns(spans)
    row["billed"] = round(row["billed"])  # a share of whole tokens; the fraction is noise on a page
    return row


def turn_window(run: Run, agent: Agent, n: int, prompt: dict, defined: dict) -> dict:
    """The window of `agent`'s turn `n` as gg assembled it: {items, reported, cost, estimated,
    unattributed}; each item {position, id, band, role, label, tokens, arrived, resident (turns
    resident up to n), share (input tokens billed to it this turn), cost (its USD this turn),
    message (its body, when this turn defined it), defined (pooled at all)}."""
    pointers = [p for p in as_list(prompt.get("request")) if isinstance(p, dict) and isinstance(p.get("id"), str)]
    rows = {}
    ids = sorted({p["id"] for p in pointers})
    pool = PooledMessage.objects.filter(run=run, agent_id=agent.agent_id).values_list(*POOL_COLUMNS)
    head = (agent.material or {}).get("ledger")
    for i in range(0, len(ids), 500):  # a long window in a few queries, never one per item
        rows.update((m[0], _pool_row(m, head)) for m in pool.filter(message_id__in=ids[i:i + 500]))
    tokens = prompt.get("tokens")
    reported = reported_input(tokens)
    sizes = [rows.get(p["id"], {}).get("tokens") for p in pointers]
    shares, unattributed = split(sizes, reported)
    cost, estimated = turn_input_cost(tokens, prompt.get("cost"), agent.model_id, model_prices())
    whole = sum(shares)
    items = []
    for i, (p, share) in enumerate(zip(pointers, shares), 1):
        row = rows.get(p["id"], {})
        spans = row.get("spans") or []
        items.append({"position": i, "id": p["id"], "band": p.get("source") or row.get("band") or "",
                      "role": row.get("role") or "", "tool": row.get("tool") or "", "label": row.get("label") or "",
                      "tokens": row.get("tokens"),
                      "arrived": row.get("arrived"), "resident": resident_turns(spans, n), "share": round(share),
                      "cost": cost * share / whole if cost is not None and whole else None,
                      "message": defined.get(p["id"]), "defined": row.get("seq") is not None})
    return {"items": items, "reported": reported, "cost": cost, "estimated": estimated,
            "unattributed": unattributed, "billed": round(whole)}


def agent_material(run: Run, agent: Agent) -> dict:
    """What material cost over the agent's life: its totals (Agent.material), its bands and its
    VIEWS_SHOWN costliest views by billed tokens, and its MATERIAL_SHOWN costliest pool items (by
    billed tokens, the residency bill)."""
    totals = dict(agent.material or {})
    head = totals.get("ledger")
    # A settled row's bill is its column (read by the index on it); a resident one's grows with the
    # ledger head, so those few (the latest window's) are settled here and ranked with them.
    rows = PooledMessage.objects.filter(run=run, agent_id=agent.agent_id)
    settled = rows.filter(weight__isnull=True, billed__gt=0).order_by("-billed", "message_id")[:MATERIAL_SHOWN]
    candidates = [_pool_row(v, head) for v in settled.values_list(*POOL_COLUMNS)]
    resident = [_pool_row(v, head) for v in rows.filter(weight__isnull=False).values_list(*POOL_COLUMNS)]
    candidates += [r for r in resident if r["billed"] > 0]
    top = sorted(candidates, key=lambda r: (-r["billed"], r["message_id"]))[:MATERIAL_SHOWN]
    billed = totals.get("billed") or 0
    totals["billed"] = round(billed)
    totals["other_views"] = round(totals.get("other_views") or 0)
    for row in top:
        row["share"] = row["billed"] / billed if billed else None
    bands = sorted(((b, t) for b, t in (totals.get("bands") or {}).items() if t), key=lambda bt: -bt[1])
    views = sorted(((band, label, t) for band, labels in (totals.get("views") or {}).items()
                    for label, t in labels.items() if t), key=lambda v: (-v[2], v[0], v[1]))[:VIEWS_SHOWN]
    tools = sorted(((name, t) for name, t in (totals.get("tools") or {}).items() if t), key=lambda nt: (-nt[1], nt[0]))
    return {"totals": totals, "top": top, "bands": [(b, round(t), t / billed if billed else None) for b, t in bands],
            "views": [(band, label, round(t), t / billed if billed else None) for band, label, t in views],
            "tools": [(name, round(t), t / billed if billed else None) for name, t in tools[:VIEWS_SHOWN]]}


def compactions(run: Run, agent: Agent, after_seq: int | None, limit: int) -> list[dict]:
    """The agent's `compaction` records after `after_seq` (the breakdown before the chart's first turn:
    a range of the index; at most `limit`): {seq, turn, strategy, before, after, reclaimed (None
    unless it reclaimed something), retained}."""
    rows = Event.objects.filter(run=run, agent_id=agent.agent_id, type="compaction")
    if after_seq is not None:
        rows = rows.filter(seq__gt=after_seq)
    out = []
    for seq, turn, raw in reversed(rows.order_by("-seq").values_list("seq", "turn", "raw")[:limit]):
        out.append({"seq": seq, "turn": turn, **compaction_figures(gg_record(raw))})
    return out


def compaction_figures(rec: dict) -> dict:
    before, after = num(rec.get("beforeTokens")), num(rec.get("afterTokens"))
    reclaimed = before - after if before is not None and after is not None else None
    return {"strategy": str(rec.get("strategy") or ""), "before": before, "after": after,
            "reclaimed": reclaimed if reclaimed and reclaimed > 0 else None,
            "retained": rec.get("retained") if isinstance(rec.get("retained"), dict) else {}}


def fullness(breakdown: dict | None) -> dict | None:
    """The fullness meter from a breakdown ({totalTokens, windowLimit, fullness}): {used, window,
    fullness (may exceed 1), over}; None without a breakdown. No window reported: fullness None."""
    if not breakdown:
        return None
    used, window = num(breakdown.get("totalTokens")), num(breakdown.get("windowLimit"))
    share = num(breakdown.get("fullness"))
    if share is None and used is not None and window:
        share = used / window
    return {"used": used, "window": window, "fullness": share, "over": share is not None and share > 1}
