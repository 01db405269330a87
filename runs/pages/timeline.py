"""The run's timeline: ``/runs/<pk>/timeline/?start=<ms>&end=<ms>`` — a server-rendered SVG.

One lane per agent incarnation in forest order; turns as blocks on one time axis (from
`turn_started` to `turn_timing`, the turn's last record), each linking to its turn; calls as ticks
(a failed one red); blocked waits (`agent_status` blocked → the agent's next status) shaded; error
turns red. Successions and forks are drawn as links from the predecessor's lane to the successor's
first moment; a spawn as a dotted link from the spawner. Zooming narrows the window (`start` /
`end`, milliseconds from the run's first stamp); blocks narrower than a pixel merge, and ticks
share a pixel, so the picture stays readable at thousands of turns and its markup stays a few hundred
elements a lane. The same few queries whatever the run, reading the fold's lanes and either the
turns in the window or, when it holds thousands, its buckets a few pixels wide, or, in a lane of a
turn a pixel or more, buckets four times as wide, whose blocks merge up to 24 px (`lanes_data`).
"""

from __future__ import annotations

from collections import defaultdict
from functools import reduce
from itertools import compress
from math import floor
from operator import gt, itemgetter, or_

from django.db import connection
from django.db.models import Max, Min, OuterRef, Q, Subquery
from django.shortcuts import render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from runs.access import run_or_404, turn_url_base
from runs.models import Agent, Run, TimelineBucket, TimelineLane, TurnSpan, WaitSpan
from runs.models.timeline import LEVELS, SLOTS, epoch_ms, read_ticks
from runs.pages.agents import FOREST_FIELDS, agent_forest
from runs.pages.common import agent_values, paged, run_context

WIDTH = 1160  # px of time axis
LABEL = 190  # px of lane labels
LANE = 26
PAD_TOP = 28
DENSE = 1500  # turns in the window beyond which it is read by bucket
# Lanes a page draws (four screens): a run of thousands of agents is drawn a page of lanes at a time. A busy
# lane is ~12 KB of turn blocks and ticks; 200 of them were 2.3 MB and 37,000 elements (1.8 s in Chromium).
LANES_SHOWN = 100
STROKES = [f"M{px} {LANE - 6}V{LANE - 1}" for px in range(WIDTH + 1)]  # a tick in column px
OFF = WIDTH + 1  # the column of ticks off the window (STROKES has none for it)
BITS = bytes.maketrans(b"01", b"\0\1")  # a mask's binary digits as false and true bytes


def _float(value):
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def _nice_step(span_ms):
    for step in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000,
                 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000):
        if span_ms / step <= 10:
            return step
    return 43_200_000


def _label(ms):
    if ms >= 60_000:
        return f"{int(ms // 60_000)}m{int(ms % 60_000 / 1000):02d}s"
    return f"{ms / 1000:g}s" if ms >= 1000 else f"{ms:g}ms"


def _window_level(pixel_ms):
    """The bucket level whose buckets are from two pixels wide to under eight (None when even the
    finest is wider: the window is drawn from its turns). A lane reads at most one bucket row for
    two pixels, and a bucket's slots are half a pixel at most, so its ticks land in their columns."""
    level = next((k for k in LEVELS if 2 ** k >= 2 * pixel_ms), LEVELS[-1])
    return level if 2 ** level < 8 * pixel_ms else None


def _slot_columns(level, a, z, scale):
    """(the first bucket of `level` in the window [a, z], [the column of each slot of the window's
    buckets in order]): a slot's tick at its middle, rounded; OFF outside the window."""
    width = 2 ** level
    first = floor(a / width)
    step = width / SLOTS * scale
    x = (first * width - a) * scale + step / 2 + 0.5
    return first, [c if 0 <= (c := floor(x + s * step)) <= WIDTH else OFF
                   for s in range((floor(z / width) - first + 1) * SLOTS)]


def _lane() -> dict:
    """A lane with nothing drawn in it yet: its ticks are a byte a pixel column, calls' then failures'
    (and one past the last column, OFF, that takes a bucket's slots outside the window: never drawn)."""
    return {"turns": [], "ticks": (bytearray(OFF + 1), bytearray(OFF + 1)), "waits": [], "first": None, "last": None,
            "widest": 6}  # px a block of merged turns grows to (`_blocks`)


def lanes_data(run: Run, start=None, end=None, agent_ids=None):
    """({agent_id: lane}, (lo, hi, total)): each lane's turns, ticks, waits and first/last moments in
    ms from the run's start (`_lane`), over the window [lo, hi] (the whole run unless zoomed), read off
    the fold's lanes, spans and buckets (runs.ingest.fold_spans), never the log. A window holding more
    than DENSE turns is read by bucket of a few pixels (WIDTH / 2 rows a lane at most; WIDTH / 8 in a
    saturated lane); a sparser one by turn, in the same number of queries. `agent_ids`: only those
    agents' lanes (the axis is the whole run's still)."""
    lanes = defaultdict(_lane)
    t0 = epoch_ms(run.started_at)
    if t0 is None:
        return lanes, (0.0, 0.0, 0.0)
    every = TimelineLane.objects.filter(run=run)
    mine = every if agent_ids is None else every.filter(agent_id__in=agent_ids)
    rows = list(mine)
    extent = every.aggregate(first=Min("first_ms"), last=Max("last_ms", filter=Q(first_ms__isnull=False)))
    # The axis starts at the run's start, or at a lane's first moment before it: a stream whose first
    # record is stamped years ahead would otherwise put every lane before the axis, and draw nothing.
    t0 = min(t0, extent["first"]) if extent["first"] is not None else t0
    for row in rows:
        if row.first_ms is not None and row.last_ms is not None:
            lanes[row.agent_id].update(first=row.first_ms - t0, last=row.last_ms - t0)
    total = max(extent["last"] - t0, 0.0) if extent["last"] is not None else 0.0
    lo = max(0.0, start if start is not None else 0.0)
    hi = min(total, end) if end is not None else total
    if hi <= lo:
        lo, hi = 0.0, total
    scale = WIDTH / max(hi - lo, 1e-3)
    a, z = t0 + lo, t0 + hi  # the window in the tables' ms

    def tick(ticks, ms, failed):  # into a lane's ticks
        column = floor((ms - a) * scale + 0.5)  # rounded, as a tick
        if 0 <= column <= WIDTH:
            ticks[failed][column] = 1

    def turn(agent_id, first, to, begun, until, error, turns=1):
        # (start, end, first turn, last turn, error, turns): a bucket's thousands are tuples, not dicts
        lanes[agent_id]["turns"].append((begun - t0, until - t0, first, to, error, turns))

    share = (hi - lo) / max(total, 1e-3)  # of the run in the window: a lane's turns in it, evenly spread
    level = _window_level((hi - lo) / WIDTH)
    dense = level is not None and sum(row.turn for row in rows) * share > DENSE
    spans = TurnSpan.objects.filter(run=run)
    buckets = TimelineBucket.objects.filter(run=run)
    waits = WaitSpan.objects.filter(run=run)
    if agent_ids is not None:
        spans, buckets, waits = (q.filter(agent_id__in=agent_ids) for q in (spans, buckets, waits))
    if dense:
        # A saturated lane (a turn a pixel or more) would draw each of its buckets as one block of
        # turns: it reads the next level, four times as wide (8 to 32 pixels, slots of two at most),
        # a quarter of the rows; the other lanes, whose gaps show, read `level`.
        coarse = level + 2
        saturated = {row.agent_id for row in rows if row.turn * share >= WIDTH} if coarse in LEVELS else set()
        read = {}  # level: its lanes; only the levels some lane reads (SQLite scans a level's range whatever its lanes)
        if len(saturated) < len(rows):
            read[level] = ~Q(agent_id__in=saturated)
        if saturated:
            read[coarse] = Q(agent_id__in=saturated)
        for agent_id in saturated:  # its blocks merge up to 24 px: a few dozen a lane, links to as many turn ranges
            lanes[agent_id]["widest"] = 24
        columns = {k: _slot_columns(k, a, z, scale) for k in read}
        buckets = buckets.filter(reduce(or_, (Q(level=k, b__gte=columns[k][0], b__lte=floor(z / 2 ** k)) & lanes_at
                                              for k, lanes_at in read.items())))
        # Each lane's slots gather in one number, bucket by bucket, then land in their columns at once.
        # (The loop over the rows is most of a dense window's time: it spares itself calls and lookups.)
        slots = defaultdict(lambda: [0, 0])  # a lane's calls' and failed results' slots
        firsts = {k: first for k, (first, _) in columns.items()}
        for agent_id, k, b, n, first_turn, last_turn, begun, until, error, calls, fails in _rows(buckets.values_list(
                "agent_id", "level", "b", "turns", "first_turn", "last_turn", "start_ms", "end_ms", "error",
                "call_slots", "fail_slots")):
            if n:
                lanes[agent_id]["turns"].append((begun - t0, until - t0, first_turn, last_turn, error, n))
            if calls or fails:
                lane, shift = slots[agent_id], (b - firsts[k]) * SLOTS
                lane[0] |= calls << shift
                lane[1] |= fails << shift
        for agent_id, masks in slots.items():
            slot_columns = columns[coarse if agent_id in saturated else level][1]
            for ticks, mask in zip(lanes[agent_id]["ticks"], masks):
                digits = format(mask, f"0{len(slot_columns)}b")[::-1].encode().translate(BITS)
                for column in compress(slot_columns, digits):
                    ticks[column] = 1
        a_read = floor(a / 2 ** level) * 2 ** level  # turns begun before the first bucket read
        read_coarse = floor(a / 2 ** coarse) * 2 ** coarse  # (earlier: a saturated lane's buckets hold those after it)
    else:
        for agent_id, n, begun, until, error, ticks in (spans.filter(start_ms__gte=a, start_ms__lte=z)
                                                        .values_list("agent_id", "turn", "start_ms", "end_ms", "error", "ticks")):
            if n:
                turn(agent_id, n, n, begun, until, error)
            for ms, failed in read_ticks(ticks):
                tick(lanes[agent_id]["ticks"], ms, failed)
        a_read = a
    if lo > 0:  # the turn each lane was in when the window opens (an agent's turns follow one another)
        latest = spans.filter(agent_id=OuterRef("agent_id"), start_ms__lt=a_read).order_by("-start_ms").values("pk")[:1]
        # By pk alone: with the run's filter too, SQLite read the run's spans by (run, start_ms) and
        # tested each against the few pks (64 ms on a 1M-event run, under 1 ms by pk).
        before = TurnSpan.objects.filter(pk__in=mine.values(pk=Subquery(latest)),
                                         end_ms__gt=a)
        for agent_id, n, begun, until, error, ticks in before.values_list(
                "agent_id", "turn", "start_ms", "end_ms", "error", "ticks"):
            if dense and agent_id in saturated and begun >= read_coarse:
                continue
            if n:
                turn(agent_id, n, n, begun, until, error)
            for ms, failed in read_ticks(ticks) if not dense else ():
                tick(lanes[agent_id]["ticks"], ms, failed)
    for row in rows:  # the open turn (its calls are in the buckets already)
        if row.turn and row.start_ms is not None and row.start_ms <= z and row.open_end() >= a:
            turn(row.agent_id, row.turn, row.turn, row.start_ms, row.open_end(), row.error)
        for ms, failed in read_ticks(row.ticks) if not dense else ():
            tick(lanes[row.agent_id]["ticks"], ms, failed)
        if row.blocked_ms is not None:
            lanes[row.agent_id]["waits"].append((row.blocked_ms - t0, None))  # still blocked: to the end of the run
    for agent_id, since, until in waits.filter(start_ms__lte=z, end_ms__gte=a).values_list(
            "agent_id", "start_ms", "end_ms"):
        lanes[agent_id]["waits"].append((since - t0, until - t0))
    for lane in lanes.values():
        lane["turns"].sort(key=itemgetter(0))
    return lanes, (lo, hi, total)


def _rows(values):
    """The rows of a values_list as the driver returns them: a dense window's thousands of bucket rows
    without Django's per-value converters (`error` is read for its truth only; 0 and 1 on SQLite)."""
    with connection.cursor() as cursor:
        cursor.execute(*values.query.sql_with_params())
        return cursor.fetchall()


def _blocks(turns, lo, scale, run_pk, agent_id, widest=6):
    """Turn blocks in pixels; neighbours narrower than a pixel merge into one block (until it is
    `widest` px wide, so a busy lane holds a few hundred blocks whatever its number of turns)."""
    out, last = [], None  # blocks: [x, w, first turn, last turn, error]
    for start, end, from_turn, to, error, n in turns:
        x0, x1 = (start - lo) * scale, (end - lo) * scale
        if x1 < 0 or x0 > WIDTH:
            continue
        x0, x1 = max(x0, 0), min(x1, WIDTH)
        # A bucket's turns (a pixel or two of them) merge as its turns would, one by one.
        if last is not None and x1 - x0 < 1.5 * n and x0 - (last[0] + last[1]) < 1 and last[1] < widest:
            last[1] = max(last[1], x1 - last[0])
            last[3] = to
            last[4] = last[4] or error
            continue
        last = [x0, max(x1 - x0, 1.0), from_turn, to, error]
        out.append(last)
    # A lane's blocks are its bulk (thousands on a long run): markup built here, the agent id and the
    # turn address escaped once a lane, rather than one template node per value.
    base = turn_url_base(run_pk, agent_id)
    link, who = base and f'<a href="{escape(base)}', escape(agent_id)
    markup = []
    for x0, w, from_turn, to, error in out:
        named = f"{from_turn}–{to}" if to != from_turn else from_turn
        bad = " error" if error else ""
        markup.append((f'{link}{from_turn}/" class="turn-block">' if link else '<a class="turn-block">')
                      + f'<rect class="turn{bad}" x="{x0:.2f}" y="6" width="{w:.2f}" height="{LANE - 12}" '
                      f'data-turn="{from_turn}"><title>{who} turn {named}{" (error)" if error else ""}</title></rect></a>')
    return mark_safe("".join(markup))


def _ticks(ticks) -> list[tuple[str, str]]:
    """[(class, path)]: the lane's calls as one path of vertical strokes, and its failed results as
    another (a column with both draws red)."""
    calls, fails = ticks
    out = []
    for cls, columns in (("tick", map(gt, calls, fails)), ("tick failed", fails)):
        d = "".join(compress(STROKES, columns))
        if d:
            out.append((cls, d))
    return out


def build(run: Run, agents: list[Agent], start=None, end=None, first_lane=None) -> dict:
    """The picture's context: LANES_SHOWN lanes in forest order from the index `first_lane` (an
    address's text)."""
    shown, pages = paged(agent_forest(agents), first_lane, LANES_SHOWN)
    lanes, (lo, hi, total) = lanes_data(run, start, end, [r.agent.agent_id for r in shown] if pages else None)
    span = max(hi - lo, 1e-3)
    scale = WIDTH / span

    def x(t):
        return (t - lo) * scale

    rows = []
    for i, row in enumerate(shown):
        agent = row.agent
        lane = lanes.get(agent.agent_id) or _lane()
        y = PAD_TOP + i * LANE
        waits = []
        for a, b in lane["waits"]:
            a, b = max(x(a), 0), min(x(b if b is not None else total), WIDTH)
            if b > a:
                waits.append({"x": round(a, 2), "w": round(max(b - a, 1), 2)})
        span_x = [x(v) for v in (lane["first"], lane["last"]) if v is not None]
        rows.append({"agent": agent, "indent": 4 + 10 * row.indent,
                     "depth": row.level if row.level > row.indent else None, "tag": row.tag, "y": y, "turns": agent.turns,
                     "blocks": _blocks(lane["turns"], lo, scale, run.pk, agent.agent_id, lane["widest"]), "waits": waits,
                     "ticks": _ticks(lane["ticks"]), "first": lane["first"],
                     "life": (round(max(min(span_x), 0), 2), round(min(max(span_x), WIDTH), 2)) if span_x else None})
    links = []
    by_pk = {row["agent"].pk: row for row in rows}
    for row in rows:
        agent, t = row["agent"], row["first"]
        source = by_pk.get(agent.predecessor_id) or by_pk.get(agent.parent_id)
        if source is None or t is None or not 0 <= x(t) <= WIDTH:
            continue
        kind = agent.transition_kind if agent.predecessor_id else "spawn"
        links.append({"x": round(x(t), 2), "y1": source["y"] + LANE / 2, "y2": row["y"] + LANE / 2, "kind": kind or "succession"})
    step = _nice_step(span)
    first_tick = (lo // step + 1) * step if lo % step else lo
    axis = []
    t = first_tick
    while t <= hi and len(axis) < 40:
        axis.append({"x": round(x(t), 2), "label": _label(t)})
        t += step
    quarter = span / 4
    return {"rows": rows, "links": links, "axis": axis, "width": WIDTH, "label": LABEL, "lane": LANE,
            "height": PAD_TOP + len(rows) * LANE + 8, "lo": lo, "hi": hi, "total": total,
            "zoom_in": (lo + quarter, hi - quarter), "zoom_out": (max(lo - 2 * quarter, 0), min(hi + 2 * quarter, total)),
            "left": (max(lo - 2 * quarter, 0), max(lo - 2 * quarter, 0) + span),
            "right": (min(hi + 2 * quarter, total) - span, min(hi + 2 * quarter, total)),
            "zoomed": lo > 0 or hi < total,
            # Lane pages (a run of more than LANES_SHOWN agents): the query keeps them across zooms.
            "lanes": pages and {**pages,
                                "query": f"&lanes={pages['first'] - 1}" if pages["earlier"] is not None else ""}}


@require_GET
def timeline(request, pk):
    run = run_or_404(pk)
    # Only what the lanes show of each agent: a run of thousands of agents spent most of this page
    # decoding the rest. (So the tab bar's badge does not count from these.)
    agents = agent_values(run, (*FOREST_FIELDS, "profile_id", "turns"))
    data = build(run, agents, _float(request.GET.get("start")), _float(request.GET.get("end")),
                 request.GET.get("lanes"))
    return render(request, "runs/timeline.html", run_context(run, "timeline", timeline=data))
