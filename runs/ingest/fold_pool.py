"""The fold of the message log (spec/stream.md §4.14, §4.15, §7.6): each agent's pool of
`context_message`s as PooledMessage rows, and each `prompt`'s window billed to the messages it points
at — the turn's reported input split by their estimated sizes (runs.stream.material) — with the turns
each stays resident, summed per agent into `Agent.material` (per band, per view and per tool too).

A window is mostly the last one's messages again, so a message's row is not rewritten for every
prompt it stays in: each agent keeps a ledger head (`Agent.material["ledger"]`, runs.stream.material.HEAD:
the running sums of each prompt's billing factors) and the messages its latest prompt pointed at, and a
resident row holds its bill up to when it entered plus the head as it did (`weight`, `since_*`). A row
is written when it is defined, enters or leaves a window, changes band, or at a turn with no prompt
(whose gap ends every span); readers add what it has been billed since (runs.stream.material.settle).

The rows a chunk touches are loaded once (`preload`), updated in memory and written once (`flush`),
like the rest of the fold: the result does not depend on where chunk boundaries fall.
"""

from __future__ import annotations

import itertools
from math import isfinite

from runs.ingest import fold_flush
from runs.models import PooledMessage
from runs.stream.material import HEAD, enter, factor, reported_input, settle, split, turn_input_cost
from runs.stream.prices import model_prices
from runs.stream.record import as_list, as_text
from runs.stream.usage import num, plus
from runs.stream.vocabulary import ID_MAX, SHORT_MAX

VIEWS_KEPT = 300  # distinct views billed by name per agent
ROWS_KEPT = 20_000  # pooled messages a Pool holds between chunks (a few MB)
CALLS_PENDING = 200  # an assistant's tool calls kept by id until their tool message names them
_FIELDS = ["role", "label", "band", "tool", "tokens", "seq", "spans", "billed", "cost", "estimated", "weight",
           "since_factor", "since_cost", "since_priced", "since_estimated"]


class Message:
    """A PooledMessage row as the fold holds it: plain attributes (a model instance per message costs
    more than the rest of its fold), written by `Pool.flush` in one statement per chunk."""

    __slots__ = ("agent_id", "message_id", *_FIELDS)

    def __init__(self, agent_id, message_id, role="", label="", band="", tool="", tokens=None, seq=None,
                 spans=None, billed=0.0, cost=None, estimated=False, weight=None, since_factor=None,
                 since_cost=None, since_priced=None, since_estimated=None):
        self.agent_id, self.message_id = agent_id, message_id
        self.role, self.label, self.band, self.tool, self.tokens, self.seq = role, label, band, tool, tokens, seq
        self.spans = [] if spans is None else spans
        self.billed, self.cost, self.estimated = billed, cost, estimated
        self.weight, self.since_factor, self.since_cost = weight, since_factor, since_cost
        self.since_priced, self.since_estimated = since_priced, since_estimated

    def open(self, weight, head) -> None:
        """Resident from the prompt after `head` on, billed `weight` a prompt."""
        self.weight, self.since_factor, self.since_cost = weight, head["factor"], head["cost"]
        self.since_priced, self.since_estimated = head["priced"], head["estimated"]

    def close(self, head) -> None:
        """Its bill up to `head` written in; no longer resident."""
        self.billed, self.cost, self.estimated, self.spans = settle(
            self.billed, self.cost, self.estimated, self.spans, self.weight,
            (self.since_factor, self.since_cost, self.since_priced, self.since_estimated), head)
        self.weight = self.since_factor = self.since_cost = self.since_priced = self.since_estimated = None


class Pool:
    """The PooledMessage rows of the fold, keyed (agent id, message id). A writer may hand one Pool
    to the fold of each of its chunks (`carry`): the rows folded so far, as written, stay held for
    the next one (a window is mostly the last turn's messages again), so only the rows it names
    that the pool does not hold are read; past ROWS_KEPT, the least recently touched are let go.

    A pool begun with the run's first record (`whole`) holds every row the run has until it lets
    one go: a row it does not hold is new, and nothing is read (most runs never hold ROWS_KEPT)."""

    def __init__(self, run, whole=False):
        self.run = run
        self.whole = whole
        self.rows: dict[tuple[str, str], Message] = {}
        self.new: set = set()
        self.dirty: set = set()
        self._prices = None

    def carry(self, run):
        """This pool for the fold of `run`'s next chunk (the price table read again: settings may change)."""
        self.run, self._prices = run, None
        return self

    @property
    def prices(self) -> dict:
        if self._prices is None:
            self._prices = model_prices()
        return self._prices

    def preload(self, records, agents) -> None:
        """Load the rows the chunk's definitions and pointers name that it does not hold, and those its
        prompts' agents (`agents`: the loaded ones by id) held resident: one query per 500 ids."""
        wanted = set()
        prompting = set()
        for rec in records:
            t = rec.get("type")
            if t == "prompt":
                aid = as_text(rec.get("agentId")) if rec.get("agentId") else "root"
                prompting.add(aid)
                wanted.update((aid, i[:ID_MAX]) for p in as_list(rec.get("request"))
                              if isinstance(p, dict) and isinstance(i := p.get("id"), str) and i)
            elif t == "context_message" and isinstance(i := rec.get("id"), str) and i:
                wanted.add((as_text(rec.get("agentId")) if rec.get("agentId") else "root", i[:ID_MAX]))
        for aid in prompting:
            if (agent := agents.get(aid)) is not None and (ledger := (agent.material or {}).get("ledger")):
                wanted.update((aid, mid) for mid in ledger["resident"])
        wanted = {key for key in wanted if key not in self.rows}  # (set -= keys() walks all the held rows)
        if not wanted or self.whole:
            return
        agents = {aid for aid, _ in wanted}
        rows = PooledMessage.objects.filter(run=self.run, agent_id__in=agents).values_list(
            "agent_id", "message_id", *_FIELDS)
        for values in fold_flush.in_chunks(rows, "message_id", {mid for _, mid in wanted}):
            if (values[0], values[1]) in wanted:
                self.rows[values[0], values[1]] = Message(*values)

    def row(self, agent_id: str, message_id: str) -> Message:
        """The row, held or new (a new one is written at `flush`; a held one only once `touch`ed)."""
        key = (agent_id, message_id)
        m = self.rows.get(key)
        if m is None:
            m = self.rows[key] = Message(agent_id, message_id)
            self.new.add(key)
        return m

    def touch(self, m: Message) -> None:
        key = (m.agent_id, m.message_id)
        if key not in self.new:
            self.dirty.add(key)

    def flush(self) -> None:
        """Write the rows this chunk touched; hold the ROWS_KEPT most recently touched for the next."""
        columns = ["agent_id", "message_id", *_FIELDS]
        if self.new:
            fold_flush.insert_rows(PooledMessage, [self.rows[k] for k in self.new], columns, run_id=self.run.pk)
        if self.dirty:
            fold_flush.update_rows(PooledMessage, [self.rows[k] for k in self.dirty], _FIELDS,
                                   keys=("agent_id", "message_id"), run_id=self.run.pk)
        for key in self.new | self.dirty:  # the most recently touched last
            self.rows[key] = self.rows.pop(key)
        for key in list(itertools.islice(self.rows, max(len(self.rows) - ROWS_KEPT, 0))):
            del self.rows[key]
            self.whole = False
        self.new.clear()
        self.dirty.clear()


def _mid(value) -> str:
    return as_text(value, ID_MAX)


def _context_message(p, seq, rec, agent):
    mid = rec.get("id")
    if not isinstance(mid, str) or not mid:
        return
    m = p.pool.row(agent.agent_id, _mid(mid))
    if m.seq is None:  # defined once per agent stream; a repeat changes nothing
        p.pool.touch(m)
        m.seq = seq
        m.role = as_text(rec.get("role"), 16)
        label = rec.get("label")
        m.label = as_text(label, 400) if label else ""
        tokens = num(rec.get("tokens"))
        m.tokens = int(tokens) if tokens is not None and 0 <= tokens < 2**62 else None
        material = _material(agent)
        if m.weight is not None:  # pointed at before it was defined: billed by its size from now on
            head = material["ledger"]
            m.close(head)
            m.open(head["resident"][m.message_id] * _known(m.tokens), head)
        material["items"] += 1
        # Per tool (§7.6): a tool message is billed to the call it answers, named by the assistant
        # message that asked for it (pooled before it); pending calls are kept by id, a bounded few.
        calls = [c for c in as_list(rec.get("toolCalls")) if isinstance(c, dict) and isinstance(c.get("id"), str)
                 and c.get("name")] if m.role == "assistant" else []
        if calls:
            pending = material.setdefault("calls", {})
            pending.update((_mid(c["id"]), [as_text(c["name"], 200), _read_path(c)]) for c in calls)
            for stale in list(pending)[:max(len(pending) - CALLS_PENDING, 0)]:
                del pending[stale]
        elif m.role == "tool" and isinstance(rec.get("toolCallId"), str) and material.get("calls"):
            m.tool, path = material["calls"].pop(_mid(rec["toolCallId"]), ["", ""])
            m.label = m.label or path  # streams predating `label`: the file the read_file call asked for


def _prompt(p, seq, rec, agent):
    pool, aid = p.pool, agent.agent_id
    pointers = [(pool.row(aid, i[:ID_MAX]), ptr.get("source")) for ptr in as_list(rec.get("request"))
                if isinstance(ptr, dict) and isinstance(i := ptr.get("id"), str) and i]
    tokens = rec.get("tokens")
    reported = reported_input(tokens)
    sizes = [m.tokens for m, _ in pointers]
    shares, unattributed = split(sizes, reported)
    cost, estimated = turn_input_cost(tokens, rec.get("cost"), agent.model_id, p.pool.prices)
    whole = sum(shares)
    material = _material(agent)
    material["turns"] += 1
    material["unattributed"] = plus(material["unattributed"], unattributed)
    if cost is not None:
        material["cost"] = plus(material["cost"] or 0, cost)
        material["estimated"] = material["estimated"] or estimated
    priced = cost is not None and whole
    size_factor = factor(reported, sum(t for t in sizes if t is not None and t > 0))
    _bill_window(pool, material, aid, agent.turns, pointers, size_factor, cost / whole if priced else None, estimated)
    bands = material["bands"]
    billed = material["billed"] or 0
    # A window is a hundred pointers and more: plus() spelled out (a sum past a double's range keeps
    # what it was), the rest as before.
    for (m, source), share in zip(pointers, shares):
        if source:
            band = source[:SHORT_MAX] if type(source) is str else as_text(source, SHORT_MAX)
            if band != m.band:
                m.band = band
                pool.touch(m)
        if isfinite(total := billed + share):
            billed = total
        band = m.band or "unknown"
        bands[band] = plus(bands.get(band, 0), share)
        if m.label:
            _bill_view(material, band, m.label, share)
        if m.tool:
            tools = material.setdefault("tools", {})
            tools[m.tool] = plus(tools.get(m.tool, 0), share)
    material["billed"] = billed


def _bill_window(pool, material, agent_id, turn, pointers, size_factor, unit_cost, estimated) -> None:
    """Advance the agent's ledger head by one prompt: the messages that left its window (or whose
    pointers changed in number) are closed at the head before it, those that entered opened there;
    those that stayed are not touched. After a turn with no prompt every span ends (spans are runs of
    consecutive turns): all are closed and enter again."""
    head = material.setdefault("ledger", {**HEAD, "resident": {}})
    counts = {}
    for m, _ in pointers:
        counts[m] = counts.get(m, 0) + 1
    now = {m.message_id: n for m, n in counts.items()}
    gap = head["turn"] is not None and turn > head["turn"] + 1
    for mid, n in head["resident"].items():
        if gap or now.get(mid) != n:
            m = pool.row(agent_id, mid)  # held: `Pool.preload` loaded it
            m.close(head)
            pool.touch(m)
    for m, n in counts.items():
        if m.weight is None:
            enter(m.spans, turn)
            m.open(n * _known(m.tokens), head)
            pool.touch(m)
    head["factor"] += size_factor
    if unit_cost is not None:
        head["cost"] += unit_cost * size_factor
        head["priced"] += 1
        head["estimated"] += bool(estimated)
    head["turn"] = turn
    head["resident"] = now


def _known(tokens) -> int:
    """A message's size as `split` counts it."""
    return tokens if tokens is not None and tokens > 0 else 0


def _read_path(call: dict) -> str:
    """The path a `read_file` call asked for (the view its result is, where the stream has no label)."""
    args = call.get("args")
    path = args.get("path") if call.get("name") == "read_file" and isinstance(args, dict) else None
    return as_text(path, 400) if isinstance(path, str) else ""


def _bill_view(material: dict, band: str, label: str, share: float) -> None:
    """Bill a labelled item to its view (§7.6: the file path, view label or documented name), kept per
    band so a path and a view label that read the same stay apart; past VIEWS_KEPT views, the rest
    are summed as other views (the agent's row stays bounded)."""
    views = material.setdefault("views", {})
    by_label = views.setdefault(band, {})
    if label in by_label or material.setdefault("view_count", 0) < VIEWS_KEPT:
        if label not in by_label:
            material["view_count"] += 1
        by_label[label] = plus(by_label.get(label, 0), share)
    else:
        material["other_views"] = plus(material.get("other_views", 0), share)


def _material(agent) -> dict:
    """The agent's running totals (Agent.material), filled in on first use."""
    m = agent.material
    if not m:
        m.update({"items": 0, "turns": 0, "billed": 0, "cost": None, "estimated": False, "unattributed": 0,
                  "bands": {}})
    return m


HANDLERS = {"context_message": _context_message, "prompt": _prompt}
