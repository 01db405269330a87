"""The fold: gg records -> projection rows (Run rollups, Agent, ModuleStore, Holding, RefusalRow, RefusalGroup).

`fold(run, rows)` is the one fold: the write path (`runs.ingest.writer`, once per appended chunk)
and the rebuild (`runs.ingest.rebuild`, once per chunk of the stored log) both call it over typed
`FoldRow`s in seq order. Every bit of state the fold needs between records lives in the projection
rows themselves (Agent.turns, Agent.open_api_calls, Run.usage, ...), never in the `Projector`, so
the result does not depend on where the chunk boundaries fall: incremental == rebuilt.

What is read, per spec/stream.md:

* Envelope (§2): ``agentId`` (missing -> ``root``), ``parentAgentId``, ``issueId``, ``sessionId``.
  Every gg record (known type or not) creates its emitter's Agent on first mention (a placeholder
  until its ``agent_spawned``). Host records (non-gg kinds of the host wrapper) are not projected.
* Tree (§4.19, §4.24, §4.25): ``agent_spawned`` fills the incarnation; ``agent_transition`` on the
  outgoing stream names the successor (``toAgentId``): its predecessor, the transition kind and the
  per-kind module rows; ``fsm_state`` the machine and state. ``parent`` is resolved from
  ``parent_agent_id`` whenever both agents exist, whatever order they arrived in.
* Status (§4.2, §4.22, §4.23, §7.1): ``agent_status``, ``agent_returned`` (-> done), and at
  ``session_ended`` agents still running/blocked become ``failed`` for the five failure statuses
  and ``done`` otherwise. The run is ``running`` until ``session_ended`` names its status (a
  ``queued`` run becomes ``running`` with its first gg record; ``interrupted`` is left alone).
  Suspended time: from ``blocked`` to the agent's next status (or ``agent_returned``), by gg's
  stamps; suspensions still open at ``session_ended`` close there.
* Holdings and stores (§4.20, §4.26, §7.4): one Holding per ``agent_modules`` row in reported order
  (disabled kinds too); a ModuleStore per enabled non-empty ``moduleId``; its snapshot is the latest
  ``*_state`` record naming it (a snapshot may arrive before the roster naming its store). Streams
  older than module ids get the reference console's synthesized ``legacy:<agentId>:<kind>``.
* Surface (§4.21): ``agent_surface`` as reported; the role from the ending calls offered.
* Counts (§4.7, §4.8, §7.5): calls on the opening half (``api_call`` by operation, ``tool_call`` by
  name); failure classes off the results, tools and APIs kept apart, never summed; error turns from
  ``turn_outcome`` by kind (``error``), and by type (``errorType``) under its kind, with the longest
  streak (``consecutiveErrors``) and the loop aborts (``loopAborts``, words, chars); turns from
  ``turn_started``. A legacy program call bridged as a tool pair inside an open ``api_call``
  bracket of the same agent (§10) counts under its tool as well, as gg counts it (the run's call
  total counts it once), and is joined to the api call whose bracket holds it (``api_tools``).
* Memory (§4.26): each ``memory_revision`` a MemoryRevision row, attributed to the store its author
  last reported (its latest ``memory_state``, else its roster's memories row); a memory store's peak
  usage, the largest figures any ``memory_state`` naming it reported (its own or gg's ``peak``).
* Context (§4.13, §7.4): per agent, each ``context_breakdown`` band summed over its turns, and its
  latest breakdown (the store cost per holder reads the holder's band there).
* Message log (§4.14, §4.15, §7.6): each agent's pool and what each message cost while resident
  (`runs.ingest.fold_pool`).
* Timeline: each agent's lane, closed turns, blocked waits and buckets (`runs.ingest.fold_spans`).
* Refusals (§4.8, §5): each refused call matched to its call, with its figures per (agent, call
  refused) (`runs.ingest.fold_refusals`).
* Usage (§4.10, §4.11, §7.5): the sum of ``usage`` deltas, each token class null-aware, per run, per
  (profile, model) and per agent; ``slot_usage`` rollups kept apart (latest per key), never added.

The per-type handlers are in `runs.ingest.fold_types`; writing the touched rows in
`runs.ingest.fold_flush`.
"""

from __future__ import annotations

from typing import NamedTuple

from runs.ingest import fold_flush, fold_pool, fold_refusals, fold_spans, fold_types
from runs.models import Agent, ModuleStore, Run
from runs.stream import call_times
from runs.stream.record import Decoded, as_list, as_text, parse_timestamp, roster_module_id
from runs.stream.vocabulary import ID_MAX, STATE_KINDS

HANDLERS = {**fold_types.HANDLERS, **fold_pool.HANDLERS}

# Statuses only session_ended sets; a rebuild returns a run in one of these to `running`.
STREAM_STATUSES = frozenset(Run.Status.values) - {"queued", "running", "interrupted"}

RUN_PROJECTION_FIELDS = [
    "status", "session_id", "session_started_seq", "started_at", "ended_at", "capability_set", "summary", "agent_count",
    "turn_count", "call_count", "error_turn_count", "error_turns", "error_types", "tool_failures",
    "api_failures", "error_facts", "usage", "slot_usage",
]  # fmt: skip


class FoldRow(NamedTuple):
    """One stored record as the fold takes it: its seq and what it decoded to."""

    seq: int
    event: Decoded


class Folded(NamedTuple):
    turns: list  # per row: the emitting agent's turn number at it (the Event.turn column), or None
    status_changed: bool  # the fold changed the run's status (the doorbell carries it)
    refusals: list = []  # the RefusalRows the fold stored (the facts read the roster again after any)
    call_ms: list = []  # per row: on a call's result, the call's milliseconds (the Event.call_ms column), or None
    agents: list | None = None  # every Agent of the run, as written, when the fold held them all (else None)
    pool: fold_pool.Pool | None = None  # the message pool as written, for the fold of the next chunk


def fold(run: Run, rows, *, save_run: bool = True, extra_run_fields=(), pool: fold_pool.Pool | None = None,
         known: list | None = None) -> Folded:
    """Fold `rows` (`FoldRow`s of `run`, in seq order, after everything folded before) into the
    projection rows, writing each touched row once. Inside the caller's transaction, with `run`
    locked and fresh; `save_run` saves its rolled-up fields (and `extra_run_fields`). `pool`: the
    message pool the fold of the chunk just before left (`fold_pool.Pool`), when nothing has folded
    into the run since; `known`: every agent of the run as that chunk left them (its `Folded.agents`,
    or those the facts read after it), on the same terms."""
    projector = Projector(run, pool, first=rows[0].seq == 1 if rows else False)
    projector.preload([r.event.record for r in rows if r.event.record is not None])
    roster = fold_refusals.Roster(run)
    turns = []
    for r in rows:
        turns.append(projector.apply(r.seq, r.event.type, r.event.record))
        if r.event.type in fold_refusals.TYPES:  # read by the agent's surface as of this record
            roster.note(r.seq, r.event, turns[-1], projector.agents.get(r.event.agent_id))
    call_ms = call_times.call_times(projector.agents, rows, turns)
    fold_spans.fold(run, rows, turns)
    fold_flush.flush(projector)
    projector.pool.flush()
    refusals = roster.flush()
    if save_run:
        run.save(update_fields=RUN_PROJECTION_FIELDS + list(extra_run_fields))
    # Every agent of the run, so that its readers after the fold need not read them again: those the chunk
    # named, and the rest as the chunk before left them (re-reading them all each chunk cost a run whose
    # agents grow with it time quadratic in its length). A rebuild in between gave the run's agents new
    # pks: more agents held than the run has, and the readers read them.
    held = {a.pk: a for a in known or ()}
    held.update((a.pk, a) for a in projector.agents.values())
    agents = list(held.values()) if len(held) == run.agent_count else None
    return Folded(turns, projector.status_changed, refusals, call_ms, agents, projector.pool)


def reset_run(run: Run) -> None:
    """Return the run's rolled-up fields to what an empty log projects to."""
    if run.status in STREAM_STATUSES:
        run.status = Run.Status.RUNNING
    run.session_id = ""
    run.session_started_seq = None
    run.started_at = None
    run.ended_at = None
    run.capability_set = None
    run.summary = None
    run.agent_count = run.turn_count = run.call_count = run.error_turn_count = 0
    run.error_turns, run.error_types, run.tool_failures, run.api_failures = {}, {}, {}, {}
    run.error_facts = {}
    run.usage, run.slot_usage = {}, {}


class Projector:
    """The state of one `fold` call: the rows it loaded, created and touched."""

    def __init__(self, run: Run, pool: fold_pool.Pool | None = None, first: bool = False):
        self.run = run
        self.agents: dict[str, Agent] = {}
        self.new_agents: dict[str, Agent] = {}
        self.dirty_agents: set[str] = set()
        self.stores: dict[str, ModuleStore] = {}
        self.new_stores: dict[str, ModuleStore] = {}
        self.dirty_stores: set[str] = set()  # snapshot written (loaded stores only)
        self.dirty_store_kinds: set[str] = set()  # kind filled in (loaded stores only)
        self.rosters: dict[str, list[dict]] = {}  # agent_id -> agent_modules rows to write
        self.pred_links: dict[str, str] = {}  # successor agent_id -> predecessor agent_id
        self.memory_revisions: list = []  # MemoryRevision rows to insert
        # The agents' message pools; from the run's first record, nothing is pooled but what it folds.
        self.pool = pool.carry(run) if pool else fold_pool.Pool(run, whole=first)
        self.status_changed = False
        self._all_agents_loaded = False
        self._started_known = run.started_at is not None

    # -- loading -------------------------------------------------------------------------------

    def preload(self, records) -> None:
        """Load the existing rows the batch's records can touch: one query per table."""
        agent_ids, module_ids = set(), set()
        for rec in records:
            aid = rec.get("agentId")
            aid = as_text(aid) if aid else "root"
            agent_ids.add(aid)
            for key in ("parentAgentId", "toAgentId"):
                v = rec.get(key)
                if v:
                    agent_ids.add(as_text(v))
            t = rec.get("type")
            if t in STATE_KINDS:
                mid = rec.get("moduleId")
                module_ids.add(as_text(mid) if mid else f"legacy:{aid}:{STATE_KINDS[t]}"[:ID_MAX])
            elif t == "agent_modules":
                for row in as_list(rec.get("modules")):
                    if isinstance(row, dict):
                        mid = roster_module_id(row, aid)
                        if mid:
                            module_ids.add(mid)
        agent_ids -= self.agents.keys()
        if agent_ids and self.run.agent_count:
            for a in fold_flush.in_chunks(Agent.objects.filter(run=self.run), "agent_id", agent_ids):
                self.agents[a.agent_id] = a
        module_ids -= self.stores.keys()
        if module_ids:
            # The snapshot is only ever replaced, never read: it is not loaded.
            stores = ModuleStore.objects.filter(run=self.run).defer("snapshot")
            for s in fold_flush.in_chunks(stores, "module_id", module_ids):
                self.stores[s.module_id] = s
        self.pool.preload(records, self.agents)

    def load_all_agents(self) -> None:
        if self._all_agents_loaded:
            return
        for a in Agent.objects.filter(run=self.run):
            if a.agent_id not in self.agents:
                self.agents[a.agent_id] = a
        self._all_agents_loaded = True

    # -- row access ----------------------------------------------------------------------------

    def agent(self, agent_id: str, seq: int) -> Agent:
        a = self.agents.get(agent_id)
        if a is None:
            a = Agent(run=self.run, agent_id=agent_id, first_seq=seq, status="running")
            self.agents[agent_id] = a
            self.new_agents[agent_id] = a
            self.run.agent_count += 1
        return a

    def store(self, module_id: str, kind: str, seq: int) -> ModuleStore:
        s = self.stores.get(module_id)
        if s is None:
            s = ModuleStore(run=self.run, module_id=module_id, kind=kind, first_seq=seq)
            self.stores[module_id] = s
            self.new_stores[module_id] = s
        elif kind and not s.kind:
            s.kind = kind
            if module_id not in self.new_stores:
                self.dirty_store_kinds.add(module_id)
        return s

    # -- one record ----------------------------------------------------------------------------

    def apply(self, seq: int, etype: str, rec: dict | None):
        """Fold one stored record; returns the emitting agent's turn number (or None)."""
        if rec is None:  # a host record: stored, not projected
            return None
        run = self.run
        aid = rec.get("agentId")
        aid = as_text(aid) if aid else "root"
        agent = self.agent(aid, seq)
        self.dirty_agents.add(aid)

        if run.status == "queued":  # its first record: the run is under way
            run.status = Run.Status.RUNNING
            self.status_changed = True
        if not self._started_known:
            started = parse_timestamp(rec.get("timestamp"))
            if started is not None:
                run.started_at = started
                self._started_known = True
        if not run.session_id:
            sid = rec.get("sessionId")
            if sid:
                run.session_id = as_text(sid)
        stamp = rec.get("timestamp")
        if isinstance(stamp, str) and stamp:
            agent.last_timestamp = stamp[:64]
            if not agent.first_timestamp:
                agent.first_timestamp = agent.last_timestamp
        pid = rec.get("parentAgentId")
        if pid and not agent.parent_agent_id:
            agent.parent_agent_id = as_text(pid)
        iid = rec.get("issueId")
        if iid and not agent.issue_id and etype != "issue_review":
            agent.issue_id = as_text(iid)

        handler = HANDLERS.get(etype)
        if handler is not None:
            handler(self, seq, rec, agent)
        return agent.turns or None
