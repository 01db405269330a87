"""Filters of the across-runs pages: seconds as a duration, a figure, a signed delta (a rate is
`runs_extras.percent`)."""

import json
from datetime import timedelta

from django import template

from runs.access import may_remove_saved, turn_url
from runs.templatetags.runs_extras import duration, usd

register = template.Library()


@register.filter
def seconds(value):
    """12.5 -> "12s" (as `duration` prints a timedelta); None -> "—"."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return "—"
    return duration(timedelta(seconds=value))


def _plain(value):
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e6 else f"{value:,.0f}"
    return f"{value:,}" if isinstance(value, int) else str(value)


@register.filter
def figure(value, name=""):
    """A compared figure: cost in dollars, durations as such, counts as integers; None -> "—"."""
    if value is None or isinstance(value, bool):
        return "—" if value is None else str(value)
    if name == "cost":
        return usd(value)
    if name == "durationSeconds":
        return seconds(value)
    return _plain(value)


@register.filter
def signed(value, name=""):
    """A delta: "+3", "−0.002", "0"; None -> ""."""
    if value is None:
        return ""
    if value == 0:
        return "0"
    text = figure(abs(value), name)
    return ("+" if value > 0 else "−") + text


@register.filter
def rate(value):
    """0.125 -> "12.5%"; None -> "—"."""
    if not isinstance(value, (int, float)):
        return "—"
    return f"{value * 100:.1f}%"


TURNS_LINKED = 12  # an agent's turn links on a comparison: all of them up to this, else its first and last


@register.filter
def turn_numbers(turns):
    """An agent's turns 1..n as links to show: every one up to TURNS_LINKED, else the first ten, None
    (an ellipsis) and the last two."""
    n = turns if isinstance(turns, int) and not isinstance(turns, bool) and turns > 0 else 0
    if n <= TURNS_LINKED:
        return list(range(1, n + 1))
    return [*range(1, TURNS_LINKED - 1), None, n - 1, n]


@register.simple_tag
def turn_links(run_pk, agent_id, turns):
    """[(turn, its page's URL)] for the turns `turn_numbers` shows, (None, "") for the ellipsis: one
    reverse per agent, the other turns' URLs formed from turn 1's (the turn page's path ends in its
    number), since a comparison links a dozen turns of every agent of both runs."""
    first = turn_url(run_pk, agent_id, 1)
    head = first[:-len("1/")] if first.endswith("/1/") else ""
    return [(t, f"{head}{t}/" if head else turn_url(run_pk, agent_id, t)) if t else (None, "")
            for t in turn_numbers(turns)]


@register.filter
def number(value):
    """A figure of the analysis: a count or a mean; None -> "—"."""
    return "—" if value is None else _plain(value)


@register.filter
def as_json(value):
    """A declared value as JSON text (a string stays itself); None -> "—"."""
    if value is None:
        return "—"
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)


@register.filter
def removable_by(saved, user):
    """Whether `user` may delete this saved view or configuration (runs.access.may_remove_saved)."""
    return may_remove_saved(user, saved)
