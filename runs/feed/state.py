"""What a feed row shows besides its own event: a fold of the log up to the event before it (open
api_call brackets, each agent's reported surface, the profiles' names, whether the run has more
than one agent yet), resumable from any seq (`FeedState.at`, from the nearest checkpoint:
`runs.feed.checkpoints`). A surface is read when a batch first holds a row of its agent.
"""

from collections import namedtuple

from django.urls import reverse

from runs.access import agent_url, turn_url
from runs.feed import checkpoints
from runs.feed.checkpoints import BRACKET_TYPES
from runs.feed.rows import compact
from runs.stream.profiles import profile_names
from runs.stream.record import as_text, parse_timestamp, record_of
from runs.models import Agent, Event, Run
from surfaces.arms import spelling_for

__all__ = ["BRACKET_TYPES", "FOLDED_RECORDS", "Ev", "FeedState", "bridged_args"]

# The Event columns a row reads, fetched as tuples (no model instances).
Ev = namedtuple("Ev", "seq type agent_id timestamp raw tool_name ok failure turn")
# The types whose stored line (not only its columns) `FeedState.before` and `bridged_args` read: an
# event folded in without a row of its own needs its line only then.
FOLDED_RECORDS = ("agent_surface", "session_started", "assistant_message", "agent_transition", "tool_call",
                  "tool_result")


def bridged_args(run_pk, events, read_on=True) -> dict:
    """{api_call seq: the arguments of the tool call bridged inside its bracket} for the api_calls
    among `events` (seq order): a legacy program call's CALL row carries them (console.md §1.4,
    step 3). A bracket still open at the end of `events` is read on in the log (one query, unless
    `read_on` is False): rows are rendered once their records are stored, and a recording stores a
    bracket in one chunk."""
    pending, found = {}, {}  # agent -> its open api_call's seq
    for ev in events:
        if ev.type == "api_call":
            pending[ev.agent_id] = ev.seq
        elif ev.agent_id in pending and (ev.type == "tool_call" or ev.type in BRACKET_TYPES):
            if ev.type == "tool_call":
                found[pending[ev.agent_id]] = record_of(ev.raw).get("args")
            del pending[ev.agent_id]
    if pending and read_on:
        after = (Event.objects.filter(run_id=run_pk, agent_id__in=list(pending), seq__gt=min(pending.values()),
                                      type__in=("tool_call",) + BRACKET_TYPES)
                 .order_by("seq").values_list("seq", "type", "agent_id", "raw"))
        for seq, etype, agent_id, raw in after.iterator(chunk_size=100):
            opened = pending.get(agent_id)
            if opened is None or seq <= opened:
                continue
            if etype == "tool_call":
                found[opened] = record_of(raw).get("args")
            del pending[agent_id]
            if not pending:
                break
    return found


def _summary(rec) -> str:
    summary = rec.get("summary")
    return summary if isinstance(summary, str) else ""


def _surface(rec):
    """(apis, language) from an agent_surface record, as the projection stores them."""
    apis = rec.get("apis")
    return (apis if isinstance(apis, list) else [], as_text(rec.get("programLanguage"), 32))


class FeedState:
    """What rows show besides their own event, as of seq `seq` (everything up to it folded in)."""

    def __init__(self, run_pk, seq=0, open_calls=(), surfaces=None, profiles=None, agents=(), multi_from=None,
                 started=None, absorbed=None, surface_seqs=None):
        self.run_pk = run_pk
        self.started = started  # the run's first gg stamp: offsets count from it
        self.seq = seq
        self.open_calls = set(open_calls)  # agents inside an api_call bracket
        self.absorbed = dict(absorbed or {})  # agent -> the summary of the tool result its bracket absorbed
        self.replies = {}  # agent -> (turn, text) of its last assistant message seen by this fold
        self.surfaces = dict(surfaces or {})  # agent_id -> (apis, language), the latest reported
        self.surface_seqs = dict(surface_seqs or {})  # agent_id -> seq of a surface not read yet
        self.profiles = dict(profiles or {})  # profile id/slug/name -> display name
        self.agents = set(agents)  # the run's agents so far (its Agent rows), until a second one
        # The seq from which the run has more than one agent: rows from there on name their agent.
        self.multi_from = multi_from
        self.spellings = {}  # (agent_id, operation) -> spelling, for the current surfaces
        self.hrefs = {}  # agent_id -> its page
        self.turn_bases = {}  # agent_id -> its turns' URL prefix ("" when no URL can carry the id)
        self.event_base = reverse("runs:event", args=(run_pk, 1))[:-2]  # + "<seq>/"

    @classmethod
    def at(cls, run_pk, seq):
        """The state after seq `seq`, read from the database (resuming mid-run)."""
        capability_set, started = Run.objects.filter(pk=run_pk).values_list("capability_set", "started_at").first() \
            or (None, None)
        if not seq:
            return cls(run_pk, 0, profiles=profile_names(capability_set), started=started)
        held = checkpoints.state_at(run_pk, seq)
        opened, surface_seqs = held.open_calls, held.surfaces  # agent -> its open api_call's / surface's seq
        open_calls = list(opened)
        absorbed = {}
        if opened:  # the tool results those open brackets absorbed so far (a bracket's span, not the run's)
            results = Event.objects.filter(run_id=run_pk, type="tool_result", agent_id__in=open_calls,
                                           seq__gt=min(opened.values()), seq__lte=seq)
            for agent_id, rseq, raw in results.order_by("seq").values_list("agent_id", "seq", "raw"):
                if rseq > opened[agent_id]:
                    absorbed[agent_id] = _summary(record_of(raw))
        agents = list(Agent.objects.filter(run_id=run_pk, first_seq__lte=seq).order_by("first_seq", "id")
                      .values_list("agent_id", "first_seq")[:2])
        multi_from = agents[1][1] if len(agents) > 1 else None
        return cls(run_pk, seq, open_calls, None, profile_names(capability_set), [a for a, _ in agents], multi_from,
                   started, absorbed, surface_seqs)

    def copy(self):
        twin = FeedState(self.run_pk, self.seq, self.open_calls, self.surfaces, self.profiles, self.agents,
                         self.multi_from, self.started, self.absorbed, self.surface_seqs)
        twin.spellings = dict(self.spellings)
        twin.replies = dict(self.replies)
        twin.hrefs = dict(self.hrefs)
        twin.turn_bases = dict(self.turn_bases)
        return twin

    def before(self, ev, rec):
        """Fold what a row reads from its own event (a surface reported now spells calls now)."""
        if self.started is None and not ev.type.startswith("host:"):
            self.started = parse_timestamp(ev.timestamp)  # as the fold sets Run.started_at
        if self.multi_from is None:
            # Where the write path creates Agent rows (runs.ingest.fold): every gg record's agent,
            # and an agent_transition's successor.
            if not ev.type.startswith("host:"):
                self.agents.add(ev.agent_id)
            if ev.type == "agent_transition" and rec.get("toAgentId"):
                self.agents.add(as_text(rec["toAgentId"]))
            if len(self.agents) > 1:
                self.multi_from = ev.seq
        if ev.type == "agent_surface":
            self.surfaces[ev.agent_id] = _surface(rec)
            self.surface_seqs.pop(ev.agent_id, None)
            self.spellings = {k: v for k, v in self.spellings.items() if k[0] != ev.agent_id}
        elif ev.type == "session_started" and isinstance(rec.get("capabilitySet"), dict):
            self.profiles = profile_names(rec["capabilitySet"])
        elif ev.type == "assistant_message" and isinstance(rec.get("text"), str):
            self.replies[ev.agent_id] = (ev.turn, rec["text"])
        elif ev.type == "tool_result" and ev.agent_id in self.open_calls:
            self.absorbed[ev.agent_id] = _summary(rec)  # the api_result row says it (step 3)

    def after(self, ev):
        if ev.type == "api_call":
            self.open_calls.add(ev.agent_id)
            self.absorbed.pop(ev.agent_id, None)
        elif ev.type in BRACKET_TYPES:
            self.open_calls.discard(ev.agent_id)
            self.absorbed.pop(ev.agent_id, None)
        self.seq = ev.seq

    def read_surfaces(self, agent_ids):
        """Read the surfaces of `agent_ids` reported before this state's seq and not read yet (one
        query: a batch reads those of its own agents, never every agent's)."""
        seqs = {self.surface_seqs.pop(a) for a in set(agent_ids) if a in self.surface_seqs}
        if seqs:
            for agent_id, raw in Event.objects.filter(run_id=self.run_pk, seq__in=seqs).values_list("agent_id", "raw"):
                self.surfaces[agent_id] = _surface(record_of(raw))

    def spell(self, agent_id, operation):
        key = (agent_id, operation)
        if key not in self.spellings:
            self.read_surfaces((agent_id,))
            apis, language = self.surfaces.get(agent_id, ([], ""))
            self.spellings[key] = spelling_for(apis, language, operation)
        return self.spellings[key]

    def profile(self, slug):
        """A profile's display name, or the slug as written (any JSON value, shown compact)."""
        return self.profiles.get(slug, slug) if isinstance(slug, str) else compact(slug)

    def href(self, seq, agent_id):
        """The agent chip's link, on rows of a run that has more than one agent by then (None
        before; "" for an agent id no URL can carry, `agent_linkable`)."""
        if self.multi_from is None or seq < self.multi_from:
            return None
        if agent_id not in self.hrefs:
            self.hrefs[agent_id] = agent_url(self.run_pk, agent_id)
        return self.hrefs[agent_id]

    def turn_href(self, agent_id, turn):
        """The page of `agent_id`'s turn `turn` ("" without a turn, or for an id no URL can carry)."""
        if not turn:
            return ""
        if agent_id not in self.turn_bases:
            self.turn_bases[agent_id] = turn_url(self.run_pk, agent_id, 1)[:-2]
        base = self.turn_bases[agent_id]
        return f"{base}{int(turn)}/" if base else ""

    def offset(self, timestamp):
        """Seconds from the run's first stamp to `timestamp`, or None."""
        stamp = parse_timestamp(timestamp) if self.started else None
        return (stamp - self.started).total_seconds() if stamp else None
