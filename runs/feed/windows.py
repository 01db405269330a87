"""Windows of the feed: the rows after a seq, read from the database and rendered, carrying the
`FeedState` from one window to the next (`runs.feed.consumer.WindowCache` keeps them per process).
"""

from dataclasses import dataclass, field

from runs.feed.html import render_rows
from runs.feed.rows import RENDERERS, Row, has_row, raw_row, unknown_row
from runs.feed.state import Ev, FeedState, bridged_args
from runs.models import Event, Run
from runs.stream.record import record_of

# Events read and sent per socket message, at most. A message costs the server about a quarter of
# a millisecond per connection besides its bytes: 50 sockets reading a 20,000-event run took 3.7 s
# of server CPU at 200 a message, 2.4 s at 500.
BATCH = 500
# A socket message stays far below the 1 MiB a WebSocket frame may carry: a row's text field is folded
# past FIELD_CHARS, and a window stops after the event whose rows bring its text past WINDOW_CHARS
# (escaping at most sextuples a character: `"` -> `&quot;`).
FIELD_CHARS = 8_000
WINDOW_CHARS = 128 * 1024


def folded(text: str, limit: int = FIELD_CHARS) -> str:
    """`text`, or its first `limit` characters and how many more there were."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def row_chars(row) -> int:
    return len(row.detail) + len(row.args) + len(row.output) + len(row.failure) + len(row.agent) + len(row.label)


class FeedRenderer:
    """Renders stored events into rows, carrying a `FeedState` from one batch to the next."""

    def __init__(self, run_pk, state=None):
        self.run_pk = run_pk
        self.state = state
        self.cut_short = False  # the last batch stopped at WINDOW_CHARS: more is stored right after it
        self.bridged = {}  # api_call seq -> the arguments of the tool call its bracket absorbed
        self.read_on = True  # rows may read the stored log around their event (False: the events alone)

    @property
    def open_calls(self):
        return self.state.open_calls

    def spell(self, agent_id, operation):
        return self.state.spell(agent_id, operation)

    def reply(self, ev):
        """The text of the agent's last assistant message in the event's turn (the reply as sent),
        or "": from the state when it saw it, else from the stored log before the event."""
        turn, text = self.state.replies.get(ev.agent_id, (None, None))
        if text is not None and turn == ev.turn:
            return text
        if not self.read_on:
            return ""
        raw = (Event.objects.filter(run_id=self.run_pk, agent_id=ev.agent_id, type="assistant_message", turn=ev.turn,
                                    seq__lt=ev.seq).order_by("-seq").values_list("raw", flat=True).first())
        text = record_of(raw).get("text") if raw else None
        return text if isinstance(text, str) else ""

    def absorbed(self, agent_id):
        """The summary of the tool result the agent's open bracket absorbed ("" for none)."""
        return self.state.absorbed.get(agent_id, "")

    def profile(self, slug):
        return self.state.profile(slug)

    def row(self, ev, kind, label, detail, tone, **extra):
        agent = ev.agent_id or "root"
        for key in ("args", "output"):
            if key in extra:
                extra[key] = folded(extra[key])
        return Row(seq=ev.seq, agent=agent, kind=kind, label=label, detail=folded(detail), tone=tone,
                   timestamp=ev.timestamp, href=self.state.href(ev.seq, agent), turn=ev.turn,
                   offset=self.state.offset(ev.timestamp), event_href=f"{self.state.event_base}{ev.seq}/",
                   turn_href=self.state.turn_href(agent, ev.turn), **extra)

    def result_row(self, ev, kind, detail, rec):
        ok = rec.get("ok", ev.ok)
        if ok is False:
            failure = ev.failure  # the class, as the write path read it (kebab-case, §6)
            return self.row(ev, kind, "result ✗", detail, "fail", failure=failure)
        return self.row(ev, kind, "result", detail, "ok")

    def _each(self, events, read_on=True, shown=None):
        """(event, its row) for each event in turn — or only those whose seq is in `shown`, the
        others folded into the state and never rendered — the state carried past each (`read_on`:
        see `bridged_args`)."""
        self.read_on = read_on
        self.bridged = bridged_args(self.run_pk, events, read_on)
        self.state.read_surfaces({ev.agent_id for ev in events if shown is None or ev.seq in shown})
        for ev in events:
            rec = record_of(ev.raw) if ev.raw else {}  # "": a context event read without its line
            self.state.before(ev, rec)
            if shown is None or ev.seq in shown:
                row = None
                if has_row(ev.type):
                    row = RENDERERS.get(ev.type, unknown_row)(self, ev, rec)
                # A record with no row of its own still has one under the raw kind (runs.feed.filters
                # keeps those only when the raw kind is asked for).
                row = row or raw_row(self, ev, rec)
                self.state.after(ev)
                yield ev, row
            else:
                self.state.after(ev)

    def rows(self, events, read_on=False, shown=None):
        """The rows of `events` (only of the seqs in `shown`, when given: the rest is context)."""
        return [row for _, row in self._each(events, read_on, shown)]

    def next_batch(self, after, limit=BATCH):
        """Rows for the next stored events after seq `after` — at most `limit` of them, and no more
        than `WINDOW_CHARS` of row text past the first (`cut_short` says so) — and the seq read up
        to (== `after` when nothing new is stored)."""
        self.cut_short = False
        events = [Ev._make(e) for e in Event.objects.filter(run_id=self.run_pk, seq__gt=after)
                  .order_by("seq").values_list(*Ev._fields)[:limit]]
        if not events:
            return [], after
        if self.state is None or self.state.seq != after:
            self.state = FeedState.at(self.run_pk, after)
        rows, chars = [], 0
        for ev, row in self._each(events):
            rows.append(row)
            chars += row_chars(row)
            if chars > WINDOW_CHARS:
                self.cut_short = ev.seq != events[-1].seq
                return rows, ev.seq
        return rows, events[-1].seq

    def render(self, rows, cursor):
        return render_rows([r for r in rows if r.kind != "raw"], cursor)


def run_state(run_pk):
    """(exists, still live?) — the feed closes once an ended run's last event is sent."""
    status = Run.objects.filter(pk=run_pk).values_list("status", flat=True).first()
    if status is None:
        return False, False
    return True, status in (Run.Status.QUEUED, Run.Status.RUNNING)


@dataclass
class FeedWindow:
    """One socket message's worth: the rows after seq `after`, rendered."""

    html: str
    cursor: int  # the last seq read (== after when nothing new was stored)
    full: bool  # `limit` events were read: there may be more right after
    live: bool  # the run's status, read before the events
    rows: list = field(default_factory=list)  # the rows in `html`, for a filtered connection


def read_window(run_pk, after, limit=BATCH, state=None):
    """(FeedWindow, the state after it) — the run's status first, so an ended run's last window
    holds every event stored before it ended."""
    _, live = run_state(run_pk)
    renderer = FeedRenderer(run_pk, state)
    rows, cursor = renderer.next_batch(after, limit)
    if cursor == after:
        return FeedWindow("", after, False, live), state
    # Seqs are contiguous: `limit` events span `limit` seqs (a gap could only make it look full,
    # which costs one more read, never a missed event). A window cut by its text is full too: more
    # is stored right after it, and it never changes.
    full = renderer.cut_short or cursor - after >= limit
    return FeedWindow(renderer.render(rows, cursor), cursor, full, live, rows), renderer.state
