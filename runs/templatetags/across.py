"""Filters of the across-runs pages: seconds as a duration, a figure, a signed delta (a rate is
`runs_extras.percent`), a compared figure's name in words and where on its run it comes from."""

import json
from datetime import timedelta
from functools import lru_cache

from django import template
from django.urls import reverse
from django.utils.html import format_html
from django.utils.http import urlencode

from runs.access import agent_url, may_remove_saved, turn_url
from runs.feed.filters import feed_url
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


# A compared figure (runs.across.compare.agent_figures, run_figures) in words, and its glossary term.
FIGURE_NAMES = {
    "agents": ("agents", "incarnation"), "turns": ("turns", ""), "errorTurns": ("error turns", "error-turn"),
    "errorTurnsByKind": ("error turns by kind", "error-turn"), "calls": ("calls", ""),
    "callsByOperation": ("calls by operation or tool", "operation"),
    "refusalsByOperation": ("refusals by operation", "refusal"),
    "failuresByClass": ("failed calls by failure class", "failure-class"), "tokens": ("tokens", ""),
    "cost": ("cost", ""), "durationSeconds": ("duration", ""), "peakContext": ("peak context", "context-band"),
    "divergences": ("divergences", "divergence"), "divergencesByKind": ("divergences by kind", "divergence"),
    "stores": ("stores", "store"), "storesByKind": ("stores by kind", "store"),
}


@register.filter
def figure_name(name):
    """`errorTurns` -> "error turns" (an unknown figure as it is named)."""
    return FIGURE_NAMES.get(name, (name, ""))[0]


# A token class as the Overview's usage table heads it.
TOKEN_WORDS = {"uncachedInput": "uncached input", "cachedInput": "cached input", "output": "output",
               "reasoning": "reasoning"}


@register.filter
def token_class(key):
    """`uncachedInput` -> "uncached input" (another key as it is)."""
    return TOKEN_WORDS.get(key, key)


@register.filter
def figure_term(name):
    """The glossary term of a compared figure, or ""."""
    return FIGURE_NAMES.get(name, (name, ""))[1]


@lru_cache(maxsize=1024)
def _paths(run_pk) -> dict:
    """A run's pages a comparison links, reversed once a run (a page of pairs links thousands of figures)."""
    return {name: reverse(f"runs:{name}", args=(run_pk,))
            for name in ("detail", "agents", "refusals", "divergences", "stores")}


_agent_page = lru_cache(maxsize=4096)(agent_url)


def figure_href(run_pk, figure, key="", agent_id="", mode=""):
    """Where a compared figure comes from on its run: a count of records opens the feed filtered to
    them (the agent's, with `agent_id`: runs.feed.filters.FeedFilter), a summary the page or section
    showing it; "" for none."""
    paths = _paths(run_pk)

    def feed(**fields):
        return feed_url(run_pk, agent=agent_id, **fields)

    page = _agent_page(run_pk, agent_id) if agent_id else paths["detail"]
    if figure == "turns":
        return feed(kind="turn")
    if figure == "callsByOperation" and key:
        return feed(op=key)
    if figure == "failuresByClass" and key:
        surface, _, failure = key.partition(" ")
        return feed(kind="call" if surface == "api" else "tool", failed=True, failure=failure)
    if figure == "calls":
        if agent_id:
            return f"{page}#surface" if page else feed(kind="tool" if mode == "tool_calling" else "call")
        return f"{paths['agents']}#agent-roster"
    if figure in ("errorTurns", "errorTurnsByKind"):
        return f"{page}#{'failed-calls' if agent_id else 'errors'}" if page else ""
    if figure in ("tokens", "cost"):
        return f"{paths['detail']}#usage"
    if figure == "durationSeconds":
        return (f"{page}#time" if page else "") if agent_id else f"{page}#clocks"
    if figure == "peakContext":
        return (f"{page}#context" if page else "") if agent_id else f"{paths['agents']}#profiles"
    if figure == "refusalsByOperation" and agent_id:  # the tab's search keeps the agents whose id holds it
        return f"{paths['refusals']}?{urlencode({'q': agent_id})}"
    if figure in ("stores", "storesByKind"):
        return paths["stores"] + (f"?{urlencode({'kind': key})}#kind-{key}" if key else "")
    where = {"agents": "agents", "refusalsByOperation": "refusals", "divergences": "divergences",
             "divergencesByKind": "divergences"}.get(figure)
    return paths[where] if where else ""


@register.simple_tag
def figure_cell(row, side, run_pk, agent_id="", mode=""):
    """One side's cell of a compared figure's row: its value, linking to `figure_href` when it has one and
    the value is not 0 or none (a tag, not an include: a page of 50 pairs has 3,000 of them)."""
    value = row[side]
    text = figure(value, row["figure"]) + ("×" if row["key"] and row["figure"] == "callsByOperation" else "")
    href = figure_href(run_pk, row["figure"], row["key"], agent_id, mode) if value else ""
    if not href:
        return format_html('<td class="num">{}</td>', text)
    return format_html('<td class="num"><a href="{}" data-side="{}">{}</a></td>', href, side, text)
