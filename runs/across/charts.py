"""Server-rendered SVG charts for the analysis: a bar per group where one figure per group reads
best, a dot per run where the spread matters (cost per run, duration). Geometry only; the template
draws it (templates/across/_chart.html)."""

from __future__ import annotations

WIDTH = 640
ROW = 22  # one group per row: the chart reads left to right whatever the labels' length
LABEL = 190
BAR_CHARTS = (("errorTurnRate", "Error-turn rate", "rate"), ("callsPerTurn", "Calls per turn", "n"),
              ("docs_view", "docs_view tokens per turn", "n"), ("search_results", "search_results tokens per turn", "n"),
              ("costPerRun", "Cost per run", "usd"))
DOT_CHARTS = (("runCosts", "Cost of each run", "usd"), ("runDurations", "Duration of each run (s)", "n"))


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
            "width": WIDTH, "label_width": LABEL, "key": key}


def dots(groups: list[dict], key: str, title: str, unit: str) -> dict | None:
    peak = max([v for g in groups for v in g[key]] + [0])
    if not peak:
        return None
    span = WIDTH - LABEL - 70
    rows = []
    for i, g in enumerate(groups):
        values = g[key]
        mean = sum(values) / len(values) if values else None
        rows.append({"label": g["group"], "y": i * ROW, "mean": mean,
                     "mean_x": LABEL + mean * span / peak if mean is not None else None,
                     "dots": [LABEL + v * span / peak for v in values]})
    return {"kind": "dots", "title": title, "unit": unit, "rows": rows, "height": len(rows) * ROW,
            "width": WIDTH, "label_width": LABEL, "key": key, "peak": peak}


def analysis_charts(result: dict) -> list[dict]:
    groups = result["groups"]
    made = [bars(groups, *spec) for spec in BAR_CHARTS] + [dots(groups, *spec) for spec in DOT_CHARTS]
    return [c for c in made if c]
