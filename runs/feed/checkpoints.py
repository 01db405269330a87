"""Checkpoints of the feed's state (`FeedCheckpoint`): at every `EVERY`-th seq, which agents are
inside an api_call bracket (and the seq of the api_call that opened it) and the seq of each agent's
latest agent_surface, and the number of events with a row of their own. `FeedState.at(seq)`
starts from the last checkpoint at or before `seq` and folds at most `EVERY` events (their type and
agent columns only), so opening the feed at the tail or anywhere in a 1M-event run reads the same.

The write path records them in the transaction that stores the events (`record`); a run stored
before checkpoints existed gets its missing ones the first time they are read (`state_at`).
"""

from runs.feed.rows import has_row
from runs.models import Event, FeedCheckpoint

EVERY = 1000
# What opens and force-closes an agent's api_call bracket (console.md §1.4, steps 2-5).
BRACKET_TYPES = ("api_call", "api_result", "turn_started", "code_execution", "turn_outcome",
                 "session_ended", "agent_transition")
FOLDED_TYPES = BRACKET_TYPES + ("agent_surface",)


class State:
    """What a checkpoint holds: agent -> its open api_call's seq, agent -> its latest surface's seq,
    and how many events so far have a feed row of their own (the feed's footer counts them)."""

    __slots__ = ("open_calls", "surfaces", "rows")

    def __init__(self, open_calls=None, surfaces=None, rows=0):
        self.open_calls, self.surfaces, self.rows = dict(open_calls or {}), dict(surfaces or {}), rows

    def fold(self, events):
        """Fold (seq, type, agent_id) triples, in seq order."""
        for seq, type_, agent_id in events:
            self.rows += has_row(type_)
            if type_ == "agent_surface":
                self.surfaces[agent_id] = seq
            elif type_ == "api_call":
                self.open_calls[agent_id] = seq
            elif type_ in BRACKET_TYPES:
                self.open_calls.pop(agent_id, None)

    def saved(self, run_pk, seq):
        return FeedCheckpoint(run_id=run_pk, seq=seq, open_calls=dict(self.open_calls), surfaces=dict(self.surfaces),
                              rows=self.rows)


def _stored(run_pk, after, upto, every_type):
    events = Event.objects.filter(run_id=run_pk, seq__gt=after, seq__lte=upto)
    if not every_type:  # the rows count is not asked for: only what changes the rest
        events = events.filter(type__in=FOLDED_TYPES)
    return events.order_by("seq").values_list("seq", "type", "agent_id")


def _walk(run_pk, start, state, events, upto):
    """Fold `events` (every event after seq `start`) up to seq `upto`, keeping the checkpoints passed."""
    points, mark = [], (start // EVERY + 1) * EVERY
    for ev in events:
        while ev[0] > mark and mark <= upto:
            points.append(state.saved(run_pk, mark))
            mark += EVERY
        if ev[0] > upto:
            break
        state.fold([ev])
    while mark <= upto:
        points.append(state.saved(run_pk, mark))
        mark += EVERY
    FeedCheckpoint.objects.bulk_create(points, ignore_conflicts=True)  # a seq's state is the same, whoever wrote it


def state_at(run_pk, seq, *, rows=False) -> State:
    """The state after seq `seq`: the last checkpoint at or before it and the events since (`rows`:
    their row count too, which reads every one of those events rather than the few that fold)."""
    point = (FeedCheckpoint.objects.filter(run_id=run_pk, seq__lte=seq).order_by("-seq")
             .values_list("seq", "open_calls", "surfaces", "rows").first())
    start, *held = point or (0, {}, {}, 0)
    state = State(*held)
    if seq - start < EVERY:
        state.fold(_stored(run_pk, start, seq, rows))
    else:  # checkpoints missing (a run stored before them): fold the gap once and keep what it passes
        _walk(run_pk, start, state, _stored(run_pk, start, seq, True).iterator(chunk_size=5000), seq)
    return state


def record(run_pk, before, events):
    """After the write path stored `events` ((seq, type, agent_id), in seq order) right after seq
    `before`: the checkpoints they pass. No query unless a multiple of EVERY is crossed."""
    if not events or events[-1][0] // EVERY == before // EVERY:
        return
    _walk(run_pk, before, state_at(run_pk, before, rows=True), events, events[-1][0])


def row_count(run_pk, seq):
    """How many of the events up to seq `seq` have a feed row of their own (at most EVERY read)."""
    return state_at(run_pk, seq, rows=True).rows


def forget(run_pk):
    return FeedCheckpoint.objects.filter(run_id=run_pk).delete()[0]
