"""Pages of feed rows read on demand (the page's window scrolling back, a jump), filtered or not.

The socket follows the tail; everything else the window shows comes from here, a bounded page at
a time, by seq: `page(after=…)` reads forward, `page(before=…)` backward, and `jump_seq` turns a
turn number or a time into the seq to read from. Each read scans at most `SCAN_LIMIT` events, so no
request runs long on a run of any size: a sparse filter returns what it found and says there is more.
A page is bounded in bytes as a socket window is: it stops after the row that brings its text past
`WINDOW_CHARS` (each field already folded), and says there is more.

A row needs the fold of the log before it (`FeedState`): a page starts from `FeedState.at` its first
event and, when filtered, folds besides the matching ones the events that change what they show: the
surfaces and the session in its span, and the api_call brackets of its call rows: rows close together,
every bracket of their agents in the span; sparser, the bracket each call row sits in (`_brackets`), a
few events a row however far apart they are.
"""

import re
from dataclasses import dataclass

from django.db import connection
from django.db.models import BooleanField, Case, OuterRef, Q, Subquery, TextField, Value, When
from django.db.models.expressions import RawSQL

from runs.feed import search
from runs.feed.html import row_html
from runs.feed.state import BRACKET_TYPES, FOLDED_RECORDS, Ev, FeedState
from runs.feed.windows import WINDOW_CHARS, FeedRenderer, row_chars
from runs.models import Agent, Event, Run

PAGE_ROWS = 100
CHUNK = 500  # events read per query
# A filtered chunk folds in the brackets between its first and last match: it asks for as many
# matches as should give the rows the page still needs at the share of matches that made rows so
# far (a chunk reading past the page's last row folds a longer span for nothing), from FILTERED_MIN
# to FILTERED_MAX.
FILTERED_MIN, FILTERED_MAX = 25, 2 * PAGE_ROWS
SCAN_LIMIT = 20_000  # events one request looks at, at most
STATE_TYPES = ("agent_surface", "session_started")
TOOL_TYPES = ("tool_call", "tool_result")
# A filtered page whose rows are closer than this many events apart on average folds every bracket
# of its rows' agents in its span; sparser, only the one each call row sits in (`_brackets`), which
# costs a few lookups a row.
SPAN_FOLD = 32
TERMS = FILTERED_MAX  # a query's terms in `_brackets`: one query for a chunk of matches


@dataclass
class Page:
    html: str
    rows: int
    lo: int  # rows before seq `lo` are not in this page: read backward from here
    hi: int  # the last seq the scan covered: read forward from here
    more_before: bool
    more_after: bool
    last_seq: int
    status: str

    def as_dict(self):
        return dict(self.__dict__)


def _events(where, *, after=None, before=None, limit=CHUNK):
    qs = Event.objects.filter(where)
    if after is not None:
        qs = qs.filter(seq__gt=after).order_by("seq")
    else:
        qs = qs.filter(seq__lt=before).order_by("-seq")
    events = [Ev._make(e) for e in qs.values_list(*Ev._fields)[:limit]]
    return events if after is not None else events[::-1]


def _multi_from(run_pk):
    second = Agent.objects.filter(run_id=run_pk).order_by("first_seq", "id").values_list("first_seq", flat=True)[1:2]
    return second[0] if second else None


def render(run_pk, events, flt, multi_from=None):
    """The rows of `events` (in seq order) that `flt` keeps."""
    first, last = events[0].seq, events[-1].seq
    state = FeedState.at(run_pk, first - 1)
    if not flt.active:
        return [r for r in FeedRenderer(run_pk, state).rows(events, read_on=True) if flt.keeps(r)]
    keep = {e.seq for e in events}
    agents = {e.agent_id for e in events}
    # Call rows read a bracket: its opening and closing, and the tool pair it absorbed.
    calls = [e for e in events if e.type in TOOL_TYPES or e.type.startswith("api_")]
    tools = {e.agent_id for e in calls}
    # The run and the span in each term, so SQLite reads each by an index (with them outside the OR,
    # it read every event of the span).
    span = {"run_id": run_pk, "seq__gte": first, "seq__lte": last}
    between = Q(type="session_started", **span) | Q(type="agent_surface", agent_id__in=agents, **span)
    close = last - first < SPAN_FOLD * len(events)
    if tools and close:
        between |= Q(type__in=BRACKET_TYPES + TOOL_TYPES, agent_id__in=tools, **span)
    context = _with_lines(Event.objects.filter(between).exclude(seq__in=keep))
    if tools and not close:
        context += _brackets(run_pk, [e.seq for e in calls], keep, first)
    merged = sorted({*events, *context})  # (an event two rows' brackets hold: once)
    if state.multi_from is None:
        state.multi_from = multi_from  # a sparse fold does not see every agent arrive
    return [r for r in FeedRenderer(run_pk, state).rows(merged, read_on=True, shown=keep) if flt.keeps(r)]


def _with_lines(context):
    """Context events (folded in, never shown), each with its line only where the fold reads it
    (a bracket's columns say all the fold needs of it)."""
    line = Case(When(type__in=FOLDED_RECORDS, then="raw"), default=Value(""), output_field=TextField())
    return [Ev._make(e) for e in context.values_list(*[line if f == "raw" else f for f in Ev._fields])]


def _brackets(run_pk, calls, keep, first):
    """What the shown call rows (seqs `calls`) read of their agents' api_call brackets (console.md
    §1.4): for each, its agent's last bracket event before it (from `first` on: the state at `first`
    holds the earlier ones) and, in a bracket still open, the tool pair it absorbed since; after a
    shown api_call, the tool call or bracket event that follows it (the bridged arguments). A few
    events a row, however far apart the rows are."""
    mine = Event.objects.filter(run_id=run_pk, agent_id=OuterRef("agent_id"))
    last_bracket = mine.filter(type__in=BRACKET_TYPES, seq__lt=OuterRef("seq")).order_by("-seq")[:1]
    following = mine.filter(type__in=("tool_call",) + BRACKET_TYPES, seq__gt=OuterRef("seq")).order_by("seq")[:1]
    marks = (Event.objects.filter(run_id=run_pk, seq__in=calls)
             .annotate(opened=Subquery(last_bracket.values("seq")), opener=Subquery(last_bracket.values("type")),
                       bridged=Case(When(type="api_call", then=Subquery(following.values("seq")))))
             .values_list("agent_id", "seq", "opened", "opener", "bridged"))
    wanted, absorbed = set(), []
    for agent_id, seq, opened, opener, bridged in marks:
        if opened is not None and opened >= first:
            wanted.add(opened)
        if opener == "api_call":
            absorbed.append((agent_id, max(opened, first - 1), seq))
        if bridged is not None:
            wanted.add(bridged)
    found = _with_lines(Event.objects.filter(run_id=run_pk, seq__in=wanted - keep)) if wanted else []
    # One term a row, each with the run, so SQLite reads each by an index (a hundred Q objects cost
    # the page more to build than to read); at most TERMS a query (SQLite refused an OR of 2,000:
    # an expression over 1,000 deep).
    table = connection.ops.quote_name(Event._meta.db_table)
    term = (f"({table}.run_id = %s AND {table}.agent_id = %s AND {table}.seq > %s AND {table}.seq < %s"
            f" AND {table}.type IN (%s, %s))")
    for i in range(0, len(absorbed), TERMS):
        batch = absorbed[i:i + TERMS]
        params = [value for agent_id, lo, hi in batch for value in (run_pk, agent_id, lo, hi, *TOOL_TYPES)]
        pairs = RawSQL(" OR ".join([term] * len(batch)), params, output_field=BooleanField())
        found += _with_lines(Event.objects.filter(pairs).exclude(seq__in=keep))
    return found


def page(run_pk, flt, *, after=None, before=None, rows=PAGE_ROWS):
    """The first `rows` matching rows after seq `after`, or the last `rows` before seq `before`
    (None: the end of the run)."""
    run = Run.objects.filter(pk=run_pk).values("last_seq", "status").first()
    forward = after is not None
    end = run["last_seq"]  # read first: everything up to it is committed
    cursor = after if forward else (end + 1 if before is None else before)
    where = flt.events(run_pk)  # words with other fields: narrowed in the same query
    multi_from = _multi_from(run_pk) if flt.active else None
    out, scanned, more = [], 0, False
    while len(out) < rows:
        if scanned >= SCAN_LIMIT:
            more = True
            break
        wanted = _filtered_chunk(rows - len(out), scanned, len(out), bool(flt.q)) if flt.active else CHUNK
        chunk = min(wanted, SCAN_LIMIT - scanned)  # the scan limit bounds one read too
        bound = {"after": cursor} if forward else {"before": cursor}
        if flt.words_only:  # the index leads, a chunk of its matches at a time (each one an event)
            hits = search.matching_seqs(run_pk, flt.q, limit=chunk, newest_first=not forward, **bound)
            events = _events(Q(run_id=run_pk, seq__in=hits), limit=chunk, **bound) if hits else []
            read, edge = len(hits), hits[-1] if hits else None
        else:
            events = _events(where, limit=chunk, **bound)
            read, edge = len(events), (events[-1].seq if forward else events[0].seq) if events else None
        if not read:
            break
        scanned += read
        found = render(run_pk, events, flt, multi_from) if events else []
        out = out + found if forward else found + out
        cursor = edge
        if read < chunk:
            break
    else:
        more = True
    if len(out) > rows:  # a chunk gave more than asked: stop at the last row kept
        more = True
        out = out[:rows] if forward else out[-rows:]
        cursor = out[-1].seq if forward else out[0].seq
    fit = _fitting(out if forward else out[::-1])
    if fit < len(out):  # huge records: the page stops at its byte budget, the rest is the next page
        more = True
        out = out[:fit] if forward else out[-fit:]
        cursor = out[-1].seq if forward else out[0].seq
    if forward:
        lo, hi = after + 1, cursor if more else max(cursor, end)
        more_before, more_after = after > 0, more
    else:
        lo, hi = (cursor if more else 0), (end if before is None else before - 1)
        more_before, more_after = more, before is not None and before <= end
    return Page("".join(map(row_html, out)), len(out), lo, hi, more_before, more_after, end, run["status"])


def _filtered_chunk(needed, scanned, found, words):
    """Matches to read for `needed` more rows, when `scanned` matches made `found` rows so far.
    With words, always the most: each read asks the index again (a common word matches a large
    share of the run), which costs more than a longer span folded."""
    if words:
        return FILTERED_MAX
    guess = needed * scanned // found if found else (FILTERED_MAX if scanned else needed)
    return max(FILTERED_MIN, min(FILTERED_MAX, guess))


def _fitting(rows):
    """How many of `rows`, from the first, a page carries: up to the one whose text brings the
    page past WINDOW_CHARS (at least one, so a page always moves on)."""
    chars = 0
    for n, row in enumerate(rows, start=1):
        chars += row_chars(row)
        if chars > WINDOW_CHARS:
            return n
    return len(rows)


def jump_seq(run_pk, *, turn=None, time=None, agent=""):
    """The seq a jump reads from: the first turn_started of turn `turn` (of `agent` when given), or
    the first record stamped at or after `time` (a gg RFC 3339 stamp, or its "HH:MM[:SS]" on the
    run's first day). None when there is no such record; ValueError for a time that is neither."""
    events = Event.objects.filter(run_id=run_pk)
    if turn is not None:
        hit = events.filter(type="turn_started", turn=turn, **({"agent_id": agent} if agent else {}))
        return hit.order_by("seq").values_list("seq", flat=True).first()
    stamp = _stamp(run_pk, time)
    if stamp is None:
        return None
    # gg stamps in seq order: a binary search over seq reads ~log2(n) single rows, never a scan.
    lo, hi = 1, Run.objects.filter(pk=run_pk).values_list("last_seq", flat=True).first() or 0
    if not hi:
        return None
    def stamped_from(seq):
        return events.filter(seq__gte=seq).exclude(timestamp="").order_by("seq").values_list("timestamp", flat=True).first()

    if (stamped_from(hi) or "") < stamp:
        return None  # nothing stamped that late
    while lo < hi:
        mid = (lo + hi) // 2
        ts = stamped_from(mid)
        if ts is not None and ts >= stamp:
            hi = mid
        else:
            lo = mid + 1
    return lo


# What the jump box sends as a time (static/js/feed.js): a clock time on the run's first day, or a stamp.
_CLOCK = r"([01]?\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d+)?)?"  # 25:00 is no time (it read "no record at or after")
_TIME = re.compile(rf"{_CLOCK}|\d{{4}}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])T{_CLOCK}(Z|[+-]\d{{2}}:\d{{2}})?")


def _stamp(run_pk, time):
    time = (time or "").strip()
    if not time:
        return None
    if not _TIME.fullmatch(time):
        raise ValueError(f"A time is HH:MM[:SS] on the run's first day or a stamp such as 2026-07-24T04:34:00Z, "
                         f"not {time!r}.")
    if "T" in time:
        return time
    first = Event.objects.filter(run_id=run_pk).exclude(timestamp="").order_by("seq").values_list("timestamp", flat=True).first()
    if not first or "T" not in first:
        return None
    return f"{first.split('T')[0]}T{time}"
