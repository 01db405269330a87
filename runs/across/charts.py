"""Server-rendered SVG charts for the analysis: a bar per group where one figure per group reads
best, a box per group where the spread over its runs matters (cost per run, duration). Geometry
only; the template draws it (templates/across/_chart.html)."""

from __future__ import annotations

WIDTH = 640
ROW = 22  # one group per row: the chart reads left to right whatever the labels' length
LABEL = 190
BAR_CHARTS = (("errorTurnRate", "Error-turn rate", "rate"), ("callsPerTurn", "Calls per turn", "n"),
              ("docs_view", "docs_view tokens per turn", "n"), ("search_results", "search_results tokens per turn", "n"),
              ("costPerRun", "Cost per run", "usd"))
BOX_CHARTS = (("costSpread", "Cost per run, spread", "usd"), ("durationSpread", "Duration per run (s), spread", "n"))


def _value(group: dict, key: str):
    if key in ("docs_view", "search_results"):
        return group["tokensPerTurn"][key]
    return group[key]


def bars(groups: list[dict], key: str, title: str, unit: str) -> dict | None:
    values = [_value(g, key) for g in groups]
    peak = max([v for v in values if v is not None] + [0])
    if not peak:
        return None
    span = WIDTH - LABEL - 70
    rows = [{"label": g["group"], "y": i * ROW, "value": v, "width": (v or 0) * span / peak}
            for i, (g, v) in enumerate(zip(groups, values))]
    return {"kind": "bars", "title": title, "unit": unit, "rows": rows, "height": len(rows) * ROW,
            "width": WIDTH, "label_width": LABEL, "key": key, "peak": peak}


def boxes(groups: list[dict], key: str, title: str, unit: str) -> dict | None:
    peak = max([g[key]["max"] for g in groups if g[key]] + [0])
    if not peak:
        return None
    span = WIDTH - LABEL - 70

    def x(v):
        return LABEL + v * span / peak
    rows = []
    for i, g in enumerate(groups):
        s = g[key]
        rows.append({"label": g["group"], "y": i * ROW, "spread": s,
                     **({"min": x(s["min"]), "q1": x(s["q1"]), "median": x(s["median"]), "q3": x(s["q3"]),
                         "max": x(s["max"]), "box": x(s["q3"]) - x(s["q1"])} if s else {})})
    return {"kind": "boxes", "title": title, "unit": unit, "rows": rows, "height": len(rows) * ROW,
            "width": WIDTH, "label_width": LABEL, "key": key, "peak": peak}


def analysis_charts(result: dict) -> list[dict]:
    groups = result["groups"]
    made = [bars(groups, *spec) for spec in BAR_CHARTS] + [boxes(groups, *spec) for spec in BOX_CHARTS]
    return [c for c in made if c]
