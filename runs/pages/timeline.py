"""The run's timeline: ``/runs/<pk>/timeline/?start=<ms>&end=<ms>`` — a server-rendered SVG.

One lane per agent incarnation in forest order; turns as blocks on one time axis (from
`turn_started` to `turn_timing`, the turn's last record), each linking to its turn; calls as ticks
(a failed one red); blocked waits (`agent_status` blocked → the agent's next status) shaded; error
turns red. Successions and forks are drawn as links from the predecessor's lane to the successor's
first moment; a spawn as a dotted link from the spawner. Zooming narrows the window (`start` /
`end`, milliseconds from the run's first stamp); blocks narrower than a pixel merge, and ticks
share a pixel, so the picture stays readable at thousands of turns and its markup stays a few hundred
elements a lane. Two queries, whatever the run.
"""

from __future__ import annotations

from collections import defaultdict

from django.shortcuts import get_object_or_404, render
from django.utils.html import escape
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_GET

from runs.stream.record import parse_timestamp
from runs.models import Event, Run
from runs.pages.agents import agent_forest
from runs.access import turn_url
from runs.pages.common import run_agents, run_context
from runs.stream.record import gg_record

WIDTH = 1160  # px of time axis
LABEL = 190  # px of lane labels
LANE = 26
PAD_TOP = 28
MARKS = ("turn_started", "turn_timing", "agent_spawned", "api_call", "tool_call", "api_result", "tool_result")
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


def lanes_data(run: Run):
    """{agent_id: lane} with turns, calls, waits and first/last moments in ms from the run's start."""
    t0 = run.started_at
    # Sorted here, not by ORDER BY: SQLite would then walk the whole run in seq order (its primary
    # key) instead of reading each type through the (run, type, seq) index.
    rows = sorted(Event.objects.filter(run=run, type__in=MARKS).order_by()
                  .values_list("seq", "type", "agent_id", "turn", "timestamp", "ok"))
    read = sorted(Event.objects.filter(run=run, type__in=READ).order_by()
                  .values_list("seq", "type", "agent_id", "turn", "timestamp", "raw"))
    stamps = {}

    def at(ts):
        if ts not in stamps:
            parsed = parse_timestamp(ts)
            stamps[ts] = (parsed - t0).total_seconds() * 1000 if parsed and t0 else None
        return stamps[ts]

    lanes = defaultdict(lambda: {"turns": {}, "calls": [], "waits": [], "first": None, "last": None})
    for seq, etype, agent_id, turn, ts, ok in rows:
        t = at(ts)
        if t is None:
            continue
        lane = lanes[agent_id]
        lane["first"] = t if lane["first"] is None else min(lane["first"], t)
        lane["last"] = t if lane["last"] is None else max(lane["last"], t)
        if etype == "turn_started" and turn:
            lane["turns"][turn] = {"n": turn, "start": t, "end": None, "error": False}
        elif etype == "turn_timing" and turn in lane["turns"]:
            lane["turns"][turn]["end"] = t
        elif etype in ("api_call", "tool_call"):
            lane["calls"].append({"t": t, "failed": False})
        elif etype in ("api_result", "tool_result") and ok is False:
            lane["calls"].append({"t": t, "failed": True})
    blocked = {}
    for seq, etype, agent_id, turn, ts, raw in read:
        t, rec = at(ts), gg_record(raw)
        lane = lanes[agent_id]
        if t is None:
            continue
        if etype == "turn_outcome" and rec.get("outcome") in ("error", "fatal") and turn in lane["turns"]:
            lane["turns"][turn]["error"] = True
        elif etype == "agent_status":
            if agent_id in blocked:
                lane["waits"].append((blocked.pop(agent_id), t))
            if rec.get("status") == "blocked":
                blocked[agent_id] = t
    for agent_id, since in blocked.items():
        lanes[agent_id]["waits"].append((since, None))  # still blocked: to the end of the run
    for lane in lanes.values():
        ordered = sorted(lane["turns"].values(), key=lambda x: x["start"])
        for i, turn in enumerate(ordered):
            if turn["end"] is None:
                turn["end"] = ordered[i + 1]["start"] if i + 1 < len(ordered) else lane["last"]
        lane["turns"] = ordered
    return lanes


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
            last["to"] = turn["n"]
            last["error"] = last["error"] or turn["error"]
            continue
        out.append({"x": x0, "w": max(x1 - x0, 1.0), "from": turn["n"], "to": turn["n"], "error": turn["error"]})
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
    lanes = lanes_data(run)
    moments = [v for lane in lanes.values() for v in (lane["first"], lane["last"]) if v is not None]
    total = max(moments) if moments else 0.0
    lo = max(0.0, start if start is not None else 0.0)
    hi = min(total, end) if end is not None else total
    if hi <= lo:
        lo, hi = 0.0, total
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
            px = round(x(call["t"]))
            if 0 <= px <= WIDTH:
                ticks[px] = ticks.get(px, False) or call["failed"]
        waits = []
        for a, b in lane["waits"]:
            a, b = max(x(a), 0), min(x(b if b is not None else total), WIDTH)
            if b > a:
                waits.append({"x": round(a, 2), "w": round(max(b - a, 1), 2)})
        span_x = [x(v) for v in (lane["first"], lane["last"]) if v is not None]
        rows.append({"agent": agent, "indent": 4 + 10 * row.level, "tag": row.tag, "y": y, "turns": len(lane["turns"]),
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
