"""Tags for the run pages: the divergence badge, error turns by kind and type, and the context-bands
chart (inline SVG)."""

import json

from django import template
from django.urls import NoReverseMatch, reverse

from runs.pages.divergences import divergence_count as _divergence_count
from runs.pages.common import error_tally
from runs.ingest.projections import as_list

register = template.Library()

# One colour per context band (spec/stream.md §4.13 order); an unknown band gets grey.
BAND_COLOURS = {
    "system": "#8d8d86", "user_prompt": "#2f5fd0", "assistant": "#6b4fbb", "tool_output": "#c77d0a",
    "compiler_error": "#b3261e", "runtime_error": "#e06c5f", "file_view": "#1f7a3a", "text_view": "#5fae73",
    "docs_view": "#0b8a8a", "search_results": "#7cc7c7", "skill": "#a05a2c", "memory": "#d4a017",
    "task_list": "#9c6fd6", "history": "#c9c7be",
}
CHART_HEIGHT = 160
BAR_GAP = 2


@register.simple_tag
def divergence_count(run):
    return _divergence_count(run)


@register.inclusion_tag("runs/_error_turns.html")
def error_turns(holder):
    """A run's or an agent's error turns by kind, with gg's error types beneath each kind."""
    return {"tally": error_tally(holder.error_turns, holder.error_types)}


@register.inclusion_tag("runs/_context_chart.html")
def context_chart(context):
    """Stacked bars, one per turn, each band a rect scaled to the tallest turn."""
    turns = context["turns"]
    width = max(6, min(28, 900 // max(len(turns), 1)))
    peak = context["peak"] or 1
    bars = []
    for i, turn in enumerate(turns):
        y = CHART_HEIGHT
        rects = []
        for band, tokens in turn["bands"]:
            h = tokens * CHART_HEIGHT / peak
            y -= h
            rects.append({"band": band, "tokens": tokens, "y": round(y, 2), "h": round(h, 2),
                          "colour": BAND_COLOURS.get(band, "#bbbbbb")})
        bars.append({"x": i * (width + BAR_GAP), "turn": turn["turn"], "total": turn["total"],
                     "window": turn["window"], "rects": rects})
    return {"bars": bars, "width": width - BAR_GAP if width > 4 else width, "height": CHART_HEIGHT,
            "svg_width": max(len(turns) * (width + BAR_GAP), 1), "peak": peak,
            "legend": [(b, BAND_COLOURS.get(b, "#bbbbbb")) for b in context["bands"]]}


@register.filter
def pretty_json(value):
    """An object as indented JSON text (escaped by the template like any other text)."""
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)


@register.filter(name="as_list")
def as_list_filter(value):
    """A snapshot's array field, or [] when the record holds anything else there (records are
    untrusted: a template must not fail on them)."""
    return as_list(value)


@register.inclusion_tag("runs/_agent_link.html")
def agent_link(run_pk, agent_id):
    """An agent's id as a link to its page; the id alone when no URL can carry it (a line break)."""
    try:
        href = reverse("runs:agent", args=(run_pk, agent_id))
    except NoReverseMatch:
        href = ""
    return {"href": href, "agent_id": agent_id}
