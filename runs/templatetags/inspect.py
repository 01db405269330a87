"""Tags for inspecting steps: times in milliseconds and offsets, links to a turn, an event, the
filtered feed and an operation's reference entry, and the stacked turn-timing bars."""

import math
from datetime import timedelta

from django import template
from django.urls import reverse
from django.utils.html import escape
from django.utils.http import urlencode
from django.utils.safestring import mark_safe

from runs.access import turn_url, turn_url_base
from runs.feed.filters import feed_url
from runs.templatetags.runs_extras import duration
from surfaces.arms import LANGUAGES

register = template.Library()


@register.filter
def ms(value):
    """A duration in milliseconds: 0.3 -> "0.3 ms", 49.754 -> "49.8 ms", 12300 -> "12.30 s", a minute and
    more as a duration reads ("2h 51m"); None -> "—"."""
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
        return "—"
    if 60_000 <= value < 1e15:  # 31,000 years: beyond, timedelta(milliseconds=) overflows; such a figure stays in s
        return duration(timedelta(milliseconds=value))
    if abs(value) >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.1f} ms" if value != int(value) or abs(value) < 10 else f"{int(value)} ms"


@register.filter
def offset_s(value):
    """Seconds from the run's start: 1.2345 -> "+1.235 s"."""
    if not isinstance(value, (int, float)):
        return "—"
    return f"{'+' if value >= 0 else '−'}{abs(value):.3f} s"


@register.simple_tag
def turn_href(run_pk, agent_id, turn):
    return turn_url(run_pk, agent_id, turn)


@register.simple_tag
def feed_href(run_pk, **fields):
    """The run's feed filtered (agent=, kind=, op=, failed=, failure=: runs.feed.filters.feed_url)."""
    return feed_url(run_pk, **fields)


@register.simple_tag
def event_href(run_pk, seq):
    return reverse("runs:event", args=(run_pk, seq)) if seq else ""


def reference_href(operation: str, language: str = "") -> str:
    """`/reference/?lang=<arm>#<operation>` (the default arm when the agent has none of the eleven)."""
    query = f"?{urlencode({'lang': language})}" if language in LANGUAGES else ""
    return f"{reverse('surfaces:reference')}{query}#{operation}"


@register.simple_tag
def reference_url(operation, language=""):
    return reference_href(str(operation), language)


@register.inclusion_tag("runs/_operation_link.html")
def operation_link(operation, language="", spelled=""):
    """An operation, spelled as the agent wrote it when known, linking to its reference entry."""
    return {"href": reference_href(str(operation), language), "operation": operation, "spelled": spelled}


@register.filter
def offset_ms(value):
    """Milliseconds from the run's start as "+1.234 s"."""
    return offset_s(value / 1000) if isinstance(value, (int, float)) else "—"


TIMING_HEIGHT = 120
PHASE_COLOURS = {"prompt": "#8d8d86", "request": "#2f5fd0", "response": "#c77d0a"}


@register.inclusion_tag("runs/_timing_chart.html")
def timing_chart(run_pk, agent_id, timings):
    """turn_timing as stacked bars, one per turn (prompt, request, response), each opening its turn."""
    turns = timings["turns"]
    width = max(4, min(28, 900 // max(len(turns), 1)))
    peak = timings["peak"] or 1
    bar_width, markup = max(width - 2, 2), []
    base = escape(turn_url_base(run_pk, agent_id))
    # A rect per phase per turn: markup built here, each value escaped once (as the context chart's).
    for i, t in enumerate(turns):
        x, y, rects = i * width, TIMING_HEIGHT, []
        title = [f"turn {t['turn'] or '—'}: {ms(t['timing']['total'])}"]
        for name, value in t["timing"]["phases"]:
            title.append(f"{name} {ms(value)}")
            h = value * TIMING_HEIGHT / peak
            y -= h
            if h > 0:
                rects.append(f'<rect x="{x}" y="{round(y, 2)}" width="{bar_width}" height="{round(h, 2)}" '
                             f'fill="{PHASE_COLOURS[name]}" data-phase="{escape(name)}"></rect>')
        href = f"{base}{t['turn']}/" if base and isinstance(t["turn"], int) and t["turn"] > 0 else ""
        markup.append(f'<a href="{href}"><g class="bar" data-turn="{t["turn"]}">'
                      f'<title>{escape(chr(10).join(title))}</title><rect x="{x}" y="0" width="{bar_width}" '
                      f'height="{TIMING_HEIGHT}" fill="transparent"></rect>{"".join(rects)}</g></a>\n    ')
    return {"bars": mark_safe("".join(markup)), "height": TIMING_HEIGHT, "svg_width": max(len(turns) * width, 1),
            "peak": peak, "legend": list(PHASE_COLOURS.items())}


@register.filter
def last_line(value):
    """The last non-blank line of a text (an error's own line: `KeyError: 'b'`)."""
    lines = [line for line in str(value or "").splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""
