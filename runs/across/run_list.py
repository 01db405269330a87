"""The runs list: filtered (runs.across.filters), sorted by any column, paged by keyset.

A page is two queries whatever the number of runs — the page itself (Run joined to RunFacts) and
the count of runs matching — and a page link carries the last row's sort key and id (`after`) or
the first row's (`before`), so page 200 costs what page 1 does.
"""

from __future__ import annotations

import base64
import json
import math
from dataclasses import dataclass
from datetime import datetime

from django.db.models import F, FloatField, Value
from django.db.models.functions import Coalesce

from runs.ingest import facts as run_facts
from runs.models import Event, Run
from runs.across.filters import RunFilter, runs as filtered_runs

PER_PAGE = 50
DELETIONS_LISTED = 10
DEFAULT_SORT = "-received"
# column -> (label, sort expression). Unknown figures sort below every known one.
COLUMNS = {
    "name": ("Run", F("name")),
    "status": ("Status", F("status")),
    "source": ("Source", F("source")),
    "received": ("Received (UTC)", F("created_at")),
    "started": ("Started (UTC)", Coalesce("started_at", "created_at")),
    "agents": ("Agents", F("agent_count")),
    "turns": ("Turns", F("turn_count")),
    "calls": ("Calls", F("call_count")),
    "errors": ("Error turns", F("error_turn_count")),
    "failed": ("Failed calls", Coalesce("facts__failed_calls", Value(0))),
    "divergences": ("Divergences", Coalesce("facts__divergences", Value(0))),
    "refusals": ("Refusals", Coalesce("facts__refusals", Value(0))),
    "tokens": ("Tokens", Coalesce("facts__total_tokens", Value(-1))),
    "cost": ("Cost", Coalesce("facts__cost", Value(-1.0), output_field=FloatField())),
    "duration": ("Duration", Coalesce("facts__duration_seconds", Value(-1.0), output_field=FloatField())),
}


TEXT_COLUMNS, TIME_COLUMNS = {"name", "status", "source"}, {"received", "started"}  # the rest are numbers
LIST_UNREAD = ("facts__refusals_by_agent", "facts__peak_context", "facts__agents")


class BadCursor(ValueError):
    pass


def encode_cursor(value, pk: int) -> str:
    if isinstance(value, datetime):
        value = {"t": value.isoformat()}
    return base64.urlsafe_b64encode(json.dumps([value, pk]).encode()).decode().rstrip("=")


def decode_cursor(text: str, column: str):
    """(sort value, pk) of a page link for a list sorted by `column`; BadCursor for anything this list
    would not have made (a value of another column's kind reached the database: a 500)."""
    try:
        value, pk = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
        if column in TIME_COLUMNS:
            value = datetime.fromisoformat(value["t"])
        elif column in TEXT_COLUMNS:
            if not isinstance(value, str):
                raise TypeError
        elif isinstance(value, bool) or not isinstance(value, (int, float)) \
                or not (math.isfinite(value) if isinstance(value, float) else abs(value) < 2 ** 63):
            raise TypeError  # a number a column holds: a finite float (cost, duration) or a 64-bit integer
        if isinstance(pk, bool) or not isinstance(pk, int) or not 0 <= pk < 2 ** 63:
            raise TypeError
    except (ValueError, TypeError, KeyError):
        raise BadCursor("That page link is not one this list made; showing the first page.") from None
    return value, pk


def parse_sort(text: str) -> tuple[str, bool]:
    """`-cost` -> ("cost", True); an unknown column falls back to the default."""
    text = text or DEFAULT_SORT
    column, desc = text.lstrip("-"), text.startswith("-")
    if column not in COLUMNS:
        column, desc = DEFAULT_SORT.lstrip("-"), True
    return column, desc


@dataclass
class ListPage:
    runs: list
    total: int
    sort: str  # as the URL spells it
    next_cursor: str | None
    prev_cursor: str | None
    problem: str = ""


def run_list_page(f: RunFilter, *, sort: str = "", after: str = "", before: str = "",
                  per_page: int = PER_PAGE) -> ListPage:
    column, desc = parse_sort(sort)
    expr = COLUMNS[column][1]
    # Not the facts' per-agent maps (a run of 8,000 agents: ~150 KB of JSON each), which no column shows.
    qs = filtered_runs(f).select_related("facts").defer(*LIST_UNREAD).annotate(sort_key=expr)
    total = qs.count()
    problem, cursor, backwards = "", None, False
    try:
        if after:
            cursor = decode_cursor(after, column)
        elif before:
            cursor, backwards = decode_cursor(before, column), True
    except BadCursor as exc:
        problem = str(exc)
    forward_desc = desc != backwards  # reading towards the start flips the order
    if cursor is not None:
        value, pk = cursor
        op = "lt" if forward_desc else "gt"
        qs = qs.filter(**{f"sort_key__{op}": value}) | qs.filter(sort_key=value, **{f"pk__{op}": pk})
    order = ("-sort_key", "-pk") if forward_desc else ("sort_key", "pk")
    rows = list(qs.order_by(*order)[:per_page + 1])
    more = len(rows) > per_page
    rows = rows[:per_page]
    if backwards:
        rows.reverse()
    has_next = more if not backwards else True
    has_prev = (cursor is not None) if not backwards else more
    for run in rows:
        run.stale_since = run_facts.stale_since(run, getattr(run, "facts", None))
    return ListPage(
        runs=rows, total=total, sort=("-" if desc else "") + column,
        next_cursor=encode_cursor(rows[-1].sort_key, rows[-1].pk) if rows and has_next else None,
        prev_cursor=encode_cursor(rows[0].sort_key, rows[0].pk) if rows and has_prev else None,
        problem=problem)


def deletions_pending() -> tuple[list[Run], int]:
    """Runs an operator deleted whose records are still going, oldest request first (at most
    `DELETIONS_LISTED`), and how many there are. Each has `records_left`: the top seq of what is
    left of its log, since a deletion takes the log from its end (one index read a run)."""
    pending = Run.every.filter(deletion_requested_at__isnull=False)
    runs = list(pending.order_by("deletion_requested_at", "pk")
                .only("pk", "name", "last_seq", "deletion_requested_at", "deletion_stopped")[:DELETIONS_LISTED])
    for run in runs:
        run.records_left = Event.objects.filter(run_id=run.pk).order_by("-seq").values_list("seq", flat=True).first() or 0
    return runs, (len(runs) if len(runs) < DELETIONS_LISTED else pending.count())
