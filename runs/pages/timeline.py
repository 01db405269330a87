"""The run's timeline: ``/runs/<pk>/timeline/?start=<ms>&end=<ms>`` — a server-rendered SVG.

One lane per agent incarnation in forest order; turns as blocks on one time axis (from
`turn_started` to `turn_timing`, the turn's last record), each linking to its turn; calls as ticks
(a failed one red); blocked waits (`agent_status` blocked → the agent's next status) shaded; error
turns red. Successions and forks are drawn as links from the predecessor's lane to the successor's
first moment; a spawn as a dotted link from the spawner. Zooming narrows the window (`start` /
`end`, milliseconds from the run's first stamp); blocks narrower than a pixel merge, and ticks
share a pixel, so the picture stays readable at thousands of turns and its markup stays a few hundred
elements a lane. Five queries, whatever the run, each returning at most a few rows per pixel column
of a lane: the marks are bucketed by the database (`lanes_data`).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict

from django.db.models import Case, F, FloatField, Func, Max, Min, Q, Value, When
from django.db.models.functions import Floor, Greatest, Least
from django.shortcuts import get_object_or_404, render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from runs.models import Event, Run
from runs.pages.agents import agent_forest
from runs.access import turn_url
from runs.pages.common import run_agents, run_context
from runs.stream.record import gg_record

WIDTH = 1160  # px of time axis
LABEL = 190  # px of lane labels
LANE = 26
PAD_TOP = 28
CALLS = ("api_call", "tool_call")
RESULTS = ("api_result", "tool_result")  # drawn only when failed (the call's tick red)
MARKS = ("turn_started", "turn_timing", "agent_spawned") + CALLS + RESULTS  # a lane's first/last moments
READ = ("turn_outcome", "agent_status")


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


class StampMs(Func):
    """A record's stored stamp as ms after ``since`` (an aware datetime), computed by the database
    (NULL where it cannot read the stamp), so a long run's marks are bucketed there, not in Python."""

    output_field = FloatField()

    def __init__(self, since):
        super().__init__(F("timestamp"), Value(since.isoformat()))

    def as_sqlite(self, compiler, connection, **extra):
        return self.as_sql(compiler, connection, template="((julianday(%(expressions)s)) * 86400000.0)",
                           arg_joiner=") - julianday(", **extra)

    def as_postgresql(self, compiler, connection, **extra):
        # gg_stamp_ms (migration 0021): NULL for a stamp PostgreSQL cannot read, where a cast would fail the page.
        return self.as_sql(compiler, connection, template="(gg_stamp_ms(%(expressions)s))",
                           arg_joiner=") - gg_stamp_ms(", **extra)


def _px(lo, scale):
    """The pixel column a mark's moment falls in, those left of the window as -1 and right of it as
    WIDTH + 1 (so a turn begun before the window, or ending after it, keeps one bucket)."""
    return Greatest(Least(Floor((F("t") - lo) * scale), Value(WIDTH + 1.0)), Value(-1.0))


def lanes_data(run: Run, start=None, end=None):
    """({agent_id: lane}, (lo, hi, total)): each lane's turns, calls, waits and first/last moments in
    ms from the run's start, read already bucketed by pixel column of the window [lo, hi] (the
    whole run unless zoomed), so a lane is at most a few WIDTH rows whatever the run's length.
    Turns starting in one column come as one {"n", "to", "start", "end"} (the end of its last turn)."""
    t0 = run.started_at
    lanes = defaultdict(lambda: {"turns": [], "calls": [], "waits": [], "first": None, "last": None})
    if t0 is None:
        return lanes, (0.0, 0.0, 0.0)
    # No ORDER BY: SQLite would then walk the whole run in seq order (its primary key) instead of
    # reading each type through the (run, type, seq) index; the narrowing to failed results is a second
    # filter so the IN on type stays that index's range.
    events = Event.objects.filter(run=run).order_by().annotate(t=StampMs(t0))
    # A lane's first and last moments are those of its first and last marks by seq: read off the
    # (run, agent, type, seq) index, then the few stamps themselves, not a min over all its marks' rows.
    extent = events.filter(type__in=MARKS).values("agent_id").annotate(first=Min("seq"), last=Max("seq"))
    extent = extent.values_list("agent_id", "first", "last")
    at = dict(events.filter(seq__in={seq for row in extent for seq in row[1:]}).values_list("seq", "t"))
    for agent_id, first, last in extent:
        if at.get(first) is not None and at.get(last) is not None:
            lanes[agent_id].update(first=at[first], last=at[last])
    total = max((lane["last"] for lane in lanes.values()), default=0.0)
    lo = max(0.0, start if start is not None else 0.0)
    hi = min(total, end) if end is not None else total
    if hi <= lo:
        lo, hi = 0.0, total
    scale = WIDTH / max(hi - lo, 1e-3)
    px = _px(lo, scale)

    calls = (events.filter(type__in=CALLS + RESULTS).filter(Q(type__in=CALLS) | Q(ok=False))
             .values(px=_px(lo - 0.5 / scale, scale), lane=F("agent_id"))
             .annotate(failed=Max(Case(When(type__in=RESULTS, then=Value(1)), default=Value(0)))))
    for agent_id, column, failed in calls.values_list("lane", "px", "failed"):
        if not 0 <= column <= WIDTH:
            continue  # the buckets either side of the window
        lanes[agent_id]["calls"].append({"px": int(column), "failed": bool(failed)})  # px rounded, as a tick

    marks = (events.filter(type__in=("turn_started", "turn_timing"), turn__gt=0)
             .values(px=px, lane=F("agent_id"), kind=F("type")).annotate(first=Min("turn"), to=Max("turn"), at=Min("t"), until=Max("t")))
    begun, ended = defaultdict(list), defaultdict(list)
    for agent_id, etype, _, first, to, at, until in marks.values_list("lane", "kind", "px", "first", "to", "at", "until"):
        if at is not None:
            (begun if etype == "turn_started" else ended)[agent_id].append((first, to, at, until))
    errors = defaultdict(list)
    blocked = {}
    # Raw is read for a status, and for an outcome only when it names an error (LIKE, a superset: the
    # outcome itself is checked below), so a long run's thousands of clean outcomes are not fetched.
    read = sorted(events.filter(type__in=READ).filter(Q(type="agent_status") | Q(raw__contains='"error"') | Q(raw__contains='"fatal"'))
                  .values_list("seq", "type", "agent_id", "turn", "t", "raw"))
    for seq, etype, agent_id, turn, t, raw in read:
        rec = gg_record(raw)
        if t is None:
            continue
        if etype == "turn_outcome" and rec.get("outcome") in ("error", "fatal"):
            errors[agent_id].append(turn)
        elif etype == "agent_status":
            if agent_id in blocked:
                lanes[agent_id]["waits"].append((blocked.pop(agent_id), t))
            if rec.get("status") == "blocked":
                blocked[agent_id] = t
    for agent_id, since in blocked.items():
        lanes[agent_id]["waits"].append((since, None))  # still blocked: to the end of the run
    for agent_id, starts in begun.items():
        lane, starts = lanes[agent_id], sorted(starts, key=lambda b: b[2])
        ends = sorted(ended[agent_id], key=lambda b: b[1])  # by their last turn, to look a turn's end up
        errs = sorted(errors[agent_id])
        for i, (first, to, at, _) in enumerate(starts):
            k = bisect_left(ends, to, key=lambda b: b[1])
            if k < len(ends) and ends[k][0] <= to:
                until = ends[k][3] if ends[k][1] == to else ends[k][2]  # its end's column, to the pixel
            else:  # no turn_timing yet: to the next turn's start, or the lane's last moment
                until = starts[i + 1][2] if i + 1 < len(starts) else max(at, lane["last"] or at)
            j = bisect_left(errs, first)
            lane["turns"].append({"n": first, "to": to, "start": at, "end": until, "error": j < len(errs) and errs[j] <= to})
    return lanes, (lo, hi, total)


def _blocks(turns, x, run_pk, agent_id):
    """Turn blocks in pixels; neighbours narrower than a pixel merge into one block (at most 6 px
    wide, so a busy lane holds a few hundred blocks whatever its number of turns)."""
    out = []
    for turn in turns:
        x0, x1 = x(turn["start"]), x(turn["end"])
        if x1 < 0 or x0 > WIDTH:
            continue
        x0, x1 = max(x0, 0), min(x1, WIDTH)
        last = out[-1] if out else None
        if last and x1 - x0 < 1.5 and x0 - (last["x"] + last["w"]) < 1 and last["w"] < 6:
            last["w"] = max(last["w"], x1 - last["x"])
            last["to"] = turn["to"]
            last["error"] = last["error"] or turn["error"]
            continue
        out.append({"x": x0, "w": max(x1 - x0, 1.0), "from": turn["n"], "to": turn["to"], "error": turn["error"]})
    # A lane's blocks are its bulk (thousands on a long run): markup built here, the agent id and the
    # turn address escaped once a lane, rather than one template node per value.
    first = turn_url(run_pk, agent_id, 1)
    href, who = escape(first.removesuffix("1/")), escape(agent_id)
    markup = []
    for b in out:
        error = b["error"]
        title = f"{who} turn {b['from']}" + (f"–{b['to']}" if b["to"] != b["from"] else "") + (" (error)" if error else "")
        markup.append((f'<a href="{href}{b["from"]}/" class="turn-block">' if first else '<a class="turn-block">')
                      + f'<rect class="turn{" error" if error else ""}" x="{round(b["x"], 2)}" y="6" '
                      f'width="{round(b["w"], 2)}" height="{LANE - 12}" data-turn="{b["from"]}"><title>{title}</title></rect></a>')
    return mark_safe("".join(markup))


def _ticks(ticks: dict) -> list[tuple[str, str]]:
    """[(class, path)]: the lane's calls as one path of vertical strokes, and its failed calls as another."""
    out = []
    for cls, failed in (("tick", False), ("tick failed", True)):
        d = "".join(f"M{px} {LANE - 6}V{LANE - 1}" for px, f in sorted(ticks.items()) if f is failed)
        if d:
            out.append((cls, d))
    return out


def build(run: Run, start=None, end=None) -> dict:
    lanes, (lo, hi, total) = lanes_data(run, start, end)
    span = max(hi - lo, 1e-3)
    scale = WIDTH / span

    def x(t):
        return (t - lo) * scale

    forest = agent_forest(run_agents(run))
    rows, y_of = [], {}
    for i, row in enumerate(forest):
        agent = row.agent
        lane = lanes.get(agent.agent_id) or {"turns": [], "calls": [], "waits": [], "first": None, "last": None}
        y = PAD_TOP + i * LANE
        y_of[agent.agent_id] = y
        ticks = {}
        for call in lane["calls"]:
            ticks[call["px"]] = ticks.get(call["px"], False) or call["failed"]
        waits = []
        for a, b in lane["waits"]:
            a, b = max(x(a), 0), min(x(b if b is not None else total), WIDTH)
            if b > a:
                waits.append({"x": round(a, 2), "w": round(max(b - a, 1), 2)})
        span_x = [x(v) for v in (lane["first"], lane["last"]) if v is not None]
        rows.append({"agent": agent, "indent": 4 + 10 * row.level, "tag": row.tag, "y": y, "turns": agent.turns,
                     "blocks": _blocks(lane["turns"], x, run.pk, agent.agent_id), "waits": waits,
                     "ticks": _ticks(ticks), "first": lane["first"],
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
            "zoomed": lo > 0 or hi < total}


@require_GET
def timeline(request, pk):
    run = get_object_or_404(Run, pk=pk)
    data = build(run, _float(request.GET.get("start")), _float(request.GET.get("end")))
    return render(request, "runs/timeline.html", run_context(run, "timeline", timeline=data))
