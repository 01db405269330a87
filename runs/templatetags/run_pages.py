"""Tags for the run pages: the divergence badge, error turns by kind and type, and the context-bands
chart (inline SVG)."""

import json

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from runs.access import agent_url, store_url as _store_url
from runs.pages.divergences import divergence_count as _divergence_count
from runs.pages.common import error_record
from runs.pages.profiles import group_key
from runs.stream.record import as_list
from runs.stream.usage import format_tokens

register = template.Library()

# One colour per context band (spec/stream.md §4.13 order); an unknown band gets grey.
BAND_COLOURS = {
    "system": "#8d8d86", "user_prompt": "#2f5fd0", "assistant": "#6b4fbb", "tool_output": "#c77d0a",
    "compiler_error": "#b3261e", "runtime_error": "#e06c5f", "file_view": "#1f7a3a", "text_view": "#5fae73",
    "docs_view": "#0b8a8a", "search_results": "#7cc7c7", "skill": "#a05a2c", "memory": "#d4a017",
    "task_list": "#9c6fd6", "history": "#c9c7be",
}
CHART_HEIGHT = 160
AXIS_MAX = 10**15  # tokens: the axis stops there (a stream can report 1e308, past a float's reach once scaled)
BAR_GAP = 2
CHART_TOP = 8  # room above the axis top's label
AXIS_LEFT = 52  # room for the token labels
AXIS_BOTTOM = 30  # room for the turn labels and the axis title


@register.simple_tag(takes_context=True)
def divergence_count(context, run):
    """The tab badge's count, from the agents and roster rows the page read (`run_context`) if any."""
    return _divergence_count(run, *context.get("badge_reads", (None, None)))


@register.inclusion_tag("runs/_error_turns.html")
def error_turns(holder, per_agent=False):
    """A run's or an agent's error turns by kind, with gg's error types beneath each kind, the types
    ranked with gg's labels and base kinds, the longest failing streak and the loop aborts."""
    return {"errors": error_record(holder), "per_agent": per_agent}


@register.inclusion_tag("runs/_context_chart.html")
def context_chart(context):
    """Stacked bars, one per turn, each band a rect, over a token axis with turn labels beneath and
    the context window's limit as a dashed line and each compaction as a marker before its turn. The
    axis reaches the limit when the peak comes within half of it; a limit far above the peak is named
    in the caption instead of flattening every bar."""
    turns = context["turns"]
    width = max(6, min(28, 900 // max(len(turns), 1)))
    peak = min(context["peak"] or 1, AXIS_MAX)
    limit = min(max((t["window"] for t in turns if t["window"]), default=None) or 0, AXIS_MAX) or None
    top = _nice(max(peak, limit) if limit and limit <= 2 * peak else peak)
    scale = CHART_HEIGHT / top
    bar_width = width - BAR_GAP if width > 4 else width
    bars, markup = [], []
    # The bars are the chart's bulk (a rect per band per turn): markup built here, each value escaped
    # once, rather than a template node per value.
    for i, turn in enumerate(turns):
        x, y = AXIS_LEFT + i * (width + BAR_GAP), CHART_TOP + CHART_HEIGHT
        bars.append({"x": x, "turn": turn["turn"]})
        title = [f"turn {turn['turn'] or '—'}: {format_tokens(turn['total'])} tokens"
                 + (f" of {format_tokens(turn['window'])}" if turn["window"] else "")]
        rects = []
        for band, tokens in turn["bands"]:
            h = min(tokens, AXIS_MAX) * scale
            y -= h
            title.append(f"{band} {format_tokens(tokens)}")
            rects.append(f'<rect x="{x}" y="{round(y, 2)}" width="{bar_width}" height="{round(h, 2)}" '
                         f'fill="{BAND_COLOURS.get(band, "#bbbbbb")}" data-band="{escape(band)}"></rect>')
        markup.append(f'<g class="bar" data-turn="{turn["turn"]}"><title>{escape(chr(10).join(title))}</title>'
                      f'{"".join(rects)}</g>\n    ')
    widest = max((len(str(t["turn"])) for t in turns), default=1)
    every = -(-max(26, 7 * widest + 6) // (width + BAR_GAP))  # a turn label every ~26 px, more for long numbers
    shown = list(range(0, len(bars), every))
    if bars and shown[-1] != len(bars) - 1:  # the latest turn is always labelled; the label before it yields
        shown[-1 if len(shown) > 1 else len(shown):] = [len(bars) - 1]
    labels = [{"x": round(bars[i]["x"] + bar_width / 2, 2), "turn": bars[i]["turn"]} for i in shown]
    plot_width = max(len(turns) * (width + BAR_GAP), 1)
    ticks = [{"y": round(CHART_TOP + CHART_HEIGHT - v * scale, 2), "value": v} for v in (0, top // 2, top)]
    # Each compaction at the turn of its post-compaction breakdown (console.md §1.8): a line before that bar.
    x_of = {bar["turn"]: bar["x"] for bar in bars}
    markers = [{**c, "x": round(x_of[c["turn"]] - BAR_GAP / 2, 2)} for c in context.get("compactions", ())
               if c["turn"] in x_of]
    for m in markers:  # a label near the right edge reads leftwards, inside the plot
        m["end"] = m["x"] > AXIS_LEFT + len(turns) * (width + BAR_GAP) - 48
    limit_line = None
    if limit and limit <= top:
        limit_line = {"y": round(CHART_TOP + CHART_HEIGHT - limit * scale, 2), "value": limit}
    return {"bars": mark_safe("".join(markup)), "height": CHART_TOP + CHART_HEIGHT + AXIS_BOTTOM,
            "svg_width": AXIS_LEFT + plot_width + 8, "plot_left": AXIS_LEFT, "plot_right": AXIS_LEFT + plot_width,
            "plot_top": CHART_TOP, "plot_bottom": CHART_TOP + CHART_HEIGHT, "label_y": CHART_TOP + CHART_HEIGHT + 14,
            "ticks": ticks, "labels": labels, "limit_line": limit_line, "markers": markers,
            "limit_off_chart": limit if limit and not limit_line else None, "peak": peak,
            "legend": [(b, BAND_COLOURS.get(b, "#bbbbbb")) for b in context["bands"]]}


def _nice(value):
    """The axis top: `value` rounded up to 1, 2 or 5 times a power of ten (at least 10)."""
    value = max(value, 10)
    magnitude = 10 ** (len(str(int(value))) - 1)
    for step in (1, 2, 5, 10):
        if value <= step * magnitude:
            return int(step * magnitude)
    return int(10 * magnitude)


@register.filter
def carried_items(request):
    """A turn's pointers to messages carried from earlier turns, as list items: a long window's
    bulk on the conversation page, built here with each value escaped once."""
    return mark_safe("".join(f'<li><span class="tag">{escape(p["band"])}</span> <code>{escape(p["id"])}</code></li>'
                             for p in request if not p["new"]))


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
    """An agent's id as a link to its page; the id alone when no URL can carry it (`agent_linkable`)."""
    return {"href": agent_url(run_pk, agent_id), "agent_id": agent_id}


@register.simple_tag
def store_url(run_pk, module_id):
    """A store's page, or "" when no URL can carry its id (runs.access.store_url)."""
    return _store_url(run_pk, module_id)


@register.simple_tag
def agent_href(run_pk, agent_id):
    """An agent's page, or "" when no URL can carry its id (runs.access.agent_url)."""
    return agent_url(run_pk, agent_id)


@register.simple_tag
def profile_instances_href(run, profile_id):
    """The Agents tab's roster of a profile's instances (its per-profile row's ?profile=)."""
    query = urlencode({"profile": group_key(run, profile_id or "")})
    return f"{reverse('runs:agents', args=(run.pk,))}?{query}#agent-roster"
