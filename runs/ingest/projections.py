"""The fold: gg records -> projection rows (Run rollups, Agent, ModuleStore, Holding).

One `Projector` is applied record by record, in seq order, both by the write path
(`runs.ingest.writer`, one Projector per appended chunk) and by `rebuild` (one Projector per chunk of the
stored log). Every bit of state the fold needs between records lives in the projection rows
themselves (Agent.turns, Agent.open_api_calls, Run.usage, ...), never in the Projector, so the
result does not depend on where the batch boundaries fall: incremental == rebuilt.

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
  ``turn_outcome`` by kind (``error``), and by type (``errorType``) under its kind; turns from
  ``turn_started``. Legacy program calls bridged as a tool pair inside
  an open ``api_call`` bracket of the same agent are not counted twice (§10).
* Context (§4.13, §7.4): per agent, each ``context_breakdown`` band summed over its turns, and its
  latest breakdown (the store cost per holder reads the holder's band there).
* Usage (§4.10, §4.11, §7.5): the sum of ``usage`` deltas, each token class null-aware, per run, per
  (profile, model) and per agent; ``slot_usage`` rollups kept apart (latest per key), never added.
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta, timezone

from django.db import connection

from runs.models import Agent, Holding, ModuleStore, Run

# ---------------------------------------------------------------------------------------------
# Vocabulary

GG_TYPES = frozenset(
    """session_started session_summary session_ended log turn_started assistant_message prompt
    context_message context_breakdown turn_timing turn_outcome usage response_rejected tool_call
    tool_result api_call api_result shell code_execution agent_spawned agent_modules agent_surface
    agent_status agent_returned agent_transition fsm_state slot_usage limit_exceeded skills_state
    memory_state memory_revision tasks_state board_state archive_state compaction context_managed
    issue_review worktree_merged provider_fault provider_switch""".split()
)
assert len(GG_TYPES) == 40

# The host wrapper's kinds (HarnessEvent, spec/stream.md §1.1). "gg" carries a gg record in
# `event`; the others are the host's own rows (stored, never projected). "usage" is also a gg type:
# a record typed "usage" is gg's when it carries a `tokens` object, the host's otherwise.
HOST_KINDS = frozenset(
    "agent reasoning command read write search list skill orchestration error warning system usage "
    "unknown".split()
)

STATE_KINDS = {
    "memory_state": "memories",
    "tasks_state": "tasks",
    "board_state": "board",
    "skills_state": "skills",
    "archive_state": "archive",
}
MODULE_KINDS = ("history", "memories", "tasks", "board", "skills", "archive")

# session_ended statuses that mark still-running agents failed (spec/stream.md §4.2).
FAILED_SESSION_STATUSES = frozenset(
    {"model_error", "auth_error", "hook_error", "compaction_failed", "internal_error"}
)
OPEN_AGENT_STATUSES = ("running", "blocked")
# Statuses only session_ended sets; a rebuild returns a run in one of these to `running`.
STREAM_STATUSES = frozenset(Run.Status.values) - {"queued", "running", "interrupted"}

TOKEN_CLASSES = ("uncachedInput", "cachedInput", "output", "reasoning")
COST_CLASSES = ("comparable", "actual")
UNCLASSIFIED = "unclassified"  # a failed result that named no failure class

REVIEW_ENDINGS = frozenset({"approve", "request_changes"})
REVIEW_OPERATIONS = frozenset({"session.approve", "session.request_changes"})
JUDGE_ENDINGS = frozenset({"select_winner"})

# Column widths (Event / Agent CharFields): values are cut to fit, never rejected.
_TYPE_MAX = 64
_ID_MAX = 200
_SHORT_MAX = 64
_DEPTH_MAX = 2**31 - 1  # Agent.depth's column; a deeper figure is not a depth


# ---------------------------------------------------------------------------------------------
# Reading one record (stateless): what it is, and the Event columns that depend on it alone


def as_text(value, limit=_ID_MAX) -> str:
    """A stream field as bounded text: absent is empty, a non-string is its compact JSON."""
    if value is None:
        return ""
    if not isinstance(value, str):
        value = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return value[:limit]


def classify(obj: dict):
    """(event type, gg record or None) for a stored JSON object.

    A bare gg record is its own gg record; ``{"type": "gg", "event": {...}}`` carries one; any other
    host kind is typed ``host:<kind>`` and has none (stored, not projected). A type gg has never had
    is still a gg record (stored, projected only through its envelope).
    """
    t = obj.get("type")
    if t == "gg":
        inner = obj.get("event")
        if isinstance(inner, dict):
            return _type_of(inner), inner
        return "host:gg", None
    if t in HOST_KINDS and not (t == "usage" and isinstance(obj.get("tokens"), dict)):
        return "host:" + t, None
    return _type_of(obj), obj


def _type_of(rec: dict) -> str:
    t = rec.get("type")
    if isinstance(t, str):
        return t[:_TYPE_MAX]
    return as_text(t, _TYPE_MAX)


def failure_class(rec: dict) -> str:
    """The failure class a result names ('' when none). Tolerates an object-shaped failure."""
    f = rec.get("failure")
    if f is None:
        return ""
    if isinstance(f, str):
        return f[:_SHORT_MAX]
    if isinstance(f, dict):
        for key in ("class", "kind", "code", "type"):
            if isinstance(f.get(key), str):
                return f[key][:_SHORT_MAX]
    return as_text(f, _SHORT_MAX)


def api_operation(rec: dict) -> str:
    """``operation``; the legacy ``{object, function}`` pair reads ``object.function``."""
    op = rec.get("operation")
    if isinstance(op, str) and op:
        return op[:_ID_MAX]
    obj, fn = rec.get("object"), rec.get("function")
    if isinstance(obj, str) and obj and isinstance(fn, str) and fn:
        return f"{obj}.{fn}"[:_ID_MAX]
    if isinstance(fn, str) and fn:
        return fn[:_ID_MAX]
    if isinstance(obj, str):
        return obj[:_ID_MAX]
    return ""


def event_columns(obj: dict):
    """(type, gg record or None, agent_id, timestamp, operation, tool_name, ok, failure).

    The Event columns that depend on the record alone; ``turn`` comes from the fold.
    """
    etype, rec = classify(obj)
    src = rec if rec is not None else obj
    agent_id = src.get("agentId")
    agent_id = as_text(agent_id) if agent_id else "root"
    ts = src.get("timestamp")
    if ts is None and rec is not None:
        ts = obj.get("timestamp")
    timestamp = as_text(ts, _SHORT_MAX)
    operation = tool_name = failure = ""
    ok = None
    if rec is not None:
        if etype == "api_call":
            operation = api_operation(rec)
        elif etype == "api_result":
            operation = api_operation(rec)
            ok = rec.get("ok") if isinstance(rec.get("ok"), bool) else None
            failure = failure_class(rec)
        elif etype == "tool_call":
            tool_name = as_text(rec.get("name"))
        elif etype == "tool_result":
            tool_name = as_text(rec.get("name"))
            ok = rec.get("ok") if isinstance(rec.get("ok"), bool) else None
            failure = failure_class(rec)
    return etype, rec, agent_id, timestamp, operation, tool_name, ok, failure


def parse_timestamp(value):
    """gg's RFC 3339 stamp (nanoseconds allowed) -> aware datetime, or None.

    A stamp without an offset is read as UTC (gg writes UTC), so stamps can always be subtracted.
    """
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        # Trim a fraction longer than Python reads (older Pythons read at most 6 digits).
        head, dot, rest = value.partition(".")
        if not dot:
            return None
        digits = len(rest) - len(rest.lstrip("0123456789"))
        value = f"{head}.{rest[:min(digits, 6)]}{rest[digits:]}"
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=timezone.utc)


def roster_module_id(row: dict, agent_id: str) -> str:
    """The store id an `agent_modules` row names ('' for none): its ``moduleId`` as text, or for an
    enabled row of a stream older than module ids the reference console's ``legacy:<agent>:<kind>``.
    `preload` and the fold read it through this one function, so they always name the same store."""
    mid = row.get("moduleId")
    if mid is None and row.get("enabled") is True:
        mid = f"legacy:{agent_id}:{as_text(row.get('kind'), 32)}"[:_ID_MAX]
    return as_text(mid)


def breakdown_bands(rec: dict) -> dict:
    """A context_breakdown's ``bySource`` as {band: tokens}: a band listed twice is summed, an empty
    band left out (a missing band reads as 0, spec/stream.md §4.13)."""
    out = {}
    for row in as_list(rec.get("bySource")):
        if isinstance(row, dict) and _num(row.get("tokens")):
            source = as_text(row.get("source"), _SHORT_MAX)
            out[source] = _plus(out.get(source, 0), row["tokens"])
    return out


# ---------------------------------------------------------------------------------------------
# Usage arithmetic (null-aware)


def empty_usage() -> dict:
    return {"tokens": {c: None for c in TOKEN_CLASSES}, "cost": {c: None for c in COST_CLASSES}, "deltas": 0}


def _finite_float(text: str):
    """A JSON number with a fraction or exponent; one past a double's range (``1e400`` is valid JSON
    syntax) reads as null, so no projection row ever holds an infinity no JSON column can store."""
    value = float(text)
    return value if math.isfinite(value) else None


def _no_constant(name):
    raise ValueError(f"{name} is not valid JSON")


def loads_record(text: str):
    """A stored line read as the fold reads it (the write path and a rebuild alike): strict JSON
    (NaN/Infinity refused), numbers past a double's range read as null, NUL characters as U+FFFD
    (`scrub_nul`). The line itself is stored verbatim either way."""
    obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    return scrub_nul(obj) if NUL_ESCAPE in text else obj


# A JSON string can hold a NUL character only as this escape (a raw control character is not JSON),
# so a line without it needs no scrubbing: the hot path pays one substring search.
NUL_ESCAPE = "\\u0000"


def scrub_nul(value):
    """`value` with every NUL character in its strings and keys replaced by U+FFFD: PostgreSQL's text
    and jsonb columns refuse NUL, and a projection must not fail its chunk over one (a binary file's
    bytes can reach an archive preview). A new object; `value` is left as it was."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {scrub_nul(k): scrub_nul(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub_nul(v) for v in value]
    return value


def as_list(value) -> list:
    """A record's array field, or [] when it holds anything else (a record is untrusted input)."""
    return value if isinstance(value, list) else []


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _plus(prev, value):
    """prev + value (prev may be None); a sum past a double's range keeps prev (never an infinity)."""
    total = value if prev is None else prev + value
    return total if not isinstance(total, float) or math.isfinite(total) else prev


def add_usage(acc: dict, tokens, cost) -> None:
    """Add one delta into `acc` (shape of `empty_usage`). A class stays null until reported."""
    if not acc:
        acc.update(empty_usage())
    acc_tokens = acc.setdefault("tokens", {c: None for c in TOKEN_CLASSES})
    if isinstance(tokens, dict):
        for c in TOKEN_CLASSES:
            v = _num(tokens.get(c))
            if v is not None:
                acc_tokens[c] = _plus(acc_tokens.get(c), v)
    acc_cost = acc.setdefault("cost", {c: None for c in COST_CLASSES})
    if isinstance(cost, dict):
        for c in COST_CLASSES:
            v = _num(cost.get(c))
            if v is not None:
                total = _plus(acc_cost.get(c), v)
                acc_cost[c] = round(total, 12) if total is not None else None
    acc["deltas"] = acc.get("deltas", 0) + 1


def total_tokens(tokens: dict | None):
    """Sum of the reported classes (reasoning is part of output, so not added), or None."""
    if not tokens:
        return None
    vals = [tokens.get(c) for c in ("uncachedInput", "cachedInput", "output")]
    vals = [v for v in vals if isinstance(v, (int, float))]
    return sum(vals) if vals else None


def derive_role(tools, apis) -> str:
    """review / judge / standard, from the ending calls the surface offers (spec/stream.md §4.21)."""
    names = {t for t in as_list(tools) if isinstance(t, str)}
    ops = set()
    for api in as_list(apis):
        if isinstance(api, dict):
            for fn in as_list(api.get("functions")):
                if isinstance(fn, dict) and isinstance(fn.get("operation"), str):
                    ops.add(fn["operation"])
    if names & JUDGE_ENDINGS or any(op.endswith("select_winner") for op in ops):
        return "judge"
    if names & REVIEW_ENDINGS or ops & REVIEW_OPERATIONS:
        return "review"
    return "standard"


def _sum(values):
    total = 0
    for v in values:
        total = _plus(total, v)
    return total


def _bump(counter: dict, key: str, n: int = 1) -> None:
    counter[key] = _plus(counter.get(key, 0), n)


def _bump_type(counter: dict, kind: str, error_type: str) -> None:
    _bump(counter.setdefault(kind, {}), error_type)


def _resume(agent: Agent, at) -> bool:
    """Close the agent's open suspension at `at` (clamped at 0 for stamps out of order); True if
    one was open. Without a stamp to close it the suspension ends unmeasured."""
    since = agent.blocked_since
    if since is None:
        return False
    if at is not None:
        agent.suspended += max(at - since, timedelta(0))
    agent.blocked_since = None
    return True


# ---------------------------------------------------------------------------------------------
# Run reset (rebuild)

RUN_PROJECTION_FIELDS = [
    "status",
    "session_id",
    "started_at",
    "ended_at",
    "capability_set",
    "summary",
    "agent_count",
    "turn_count",
    "call_count",
    "error_turn_count",
    "error_turns",
    "error_types",
    "tool_failures",
    "api_failures",
    "usage",
    "slot_usage",
]


def reset_run(run: Run) -> None:
    """Return the run's rolled-up fields to what an empty log projects to."""
    if run.status in STREAM_STATUSES:
        run.status = Run.Status.RUNNING
    run.session_id = ""
    run.started_at = None
    run.ended_at = None
    run.capability_set = None
    run.summary = None
    run.agent_count = run.turn_count = run.call_count = run.error_turn_count = 0
    run.error_turns, run.error_types, run.tool_failures, run.api_failures = {}, {}, {}, {}
    run.usage, run.slot_usage = {}, {}


# ---------------------------------------------------------------------------------------------
# The fold

_AGENT_UPDATE_FIELDS = [
    f.name
    for f in Agent._meta.concrete_fields
    if not f.primary_key and f.name not in ("run", "agent_id")
]
_STORE_UPDATE_FIELDS = ["kind", "snapshot_type", "snapshot", "snapshot_seq"]


class Projector:
    """Folds gg records of one run into its projection rows.

    Usage (one per batch, inside the batch's transaction, with `run` locked and fresh)::

        p = Projector(run)
        p.preload(records)              # the gg records of the batch (one query per table)
        for seq, rec in ...:
            turn = p.apply(seq, etype, rec)
        p.flush()                       # bulk-writes every dirty row once, then saves the run

    `apply` returns the emitting agent's turn number at this record (the Event.turn column).
    """

    def __init__(self, run: Run):
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
                module_ids.add(as_text(mid) if mid else f"legacy:{aid}:{STATE_KINDS[t]}"[:_ID_MAX])
            elif t == "agent_modules":
                for row in as_list(rec.get("modules")):
                    if isinstance(row, dict):
                        mid = roster_module_id(row, aid)
                        if mid:
                            module_ids.add(mid)
        agent_ids -= self.agents.keys()
        if agent_ids and self.run.agent_count:
            for a in _in_chunks(Agent.objects.filter(run=self.run), "agent_id", agent_ids):
                self.agents[a.agent_id] = a
        module_ids -= self.stores.keys()
        if module_ids:
            # The snapshot is only ever replaced, never read: it is not loaded.
            stores = ModuleStore.objects.filter(run=self.run).defer("snapshot")
            for s in _in_chunks(stores, "module_id", module_ids):
                self.stores[s.module_id] = s

    def _load_all_agents(self) -> None:
        if self._all_agents_loaded:
            return
        for a in Agent.objects.filter(run=self.run):
            if a.agent_id not in self.agents:
                self.agents[a.agent_id] = a
        self._all_agents_loaded = True

    # -- row access ----------------------------------------------------------------------------

    def _agent(self, agent_id: str, seq: int) -> Agent:
        a = self.agents.get(agent_id)
        if a is None:
            a = Agent(run=self.run, agent_id=agent_id, first_seq=seq, status="running")
            self.agents[agent_id] = a
            self.new_agents[agent_id] = a
            self.run.agent_count += 1
        return a

    def _store(self, module_id: str, kind: str, seq: int) -> ModuleStore:
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
        agent = self._agent(aid, seq)
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
        pid = rec.get("parentAgentId")
        if pid and not agent.parent_agent_id:
            agent.parent_agent_id = as_text(pid)
        iid = rec.get("issueId")
        if iid and not agent.issue_id and etype != "issue_review":
            agent.issue_id = as_text(iid)

        handler = _HANDLERS.get(etype)
        if handler is not None:
            handler(self, seq, rec, agent)
        return agent.turns or None

    # -- handlers (bound via _HANDLERS) --------------------------------------------------------

    def _session_started(self, seq, rec, agent):
        cs = rec.get("capabilitySet")
        if isinstance(cs, dict):
            self.run.capability_set = cs

    def _session_summary(self, seq, rec, agent):
        summary = rec.get("summary")
        if summary is not None:
            self.run.summary = summary

    def _session_ended(self, seq, rec, agent):
        run = self.run
        status = as_text(rec.get("status"), 32) or "unknown"
        if run.status != status:
            run.status = status
            self.status_changed = True
        ended = parse_timestamp(rec.get("timestamp"))
        if ended is not None:
            run.ended_at = ended
        final = "failed" if status in FAILED_SESSION_STATUSES else "done"
        self._load_all_agents()
        for a in self.agents.values():
            changed = _resume(a, ended)  # open suspensions close (spec/stream.md §7.1)
            if a.status in OPEN_AGENT_STATUSES:
                a.status = final
                changed = True
            if changed:
                self.dirty_agents.add(a.agent_id)

    def _turn_started(self, seq, rec, agent):
        agent.turns += 1
        agent.open_api_calls = 0  # a bracket never spans turns
        self.run.turn_count += 1

    def _turn_outcome(self, seq, rec, agent):
        outcome = rec.get("outcome")
        if outcome == "error" or outcome == "fatal":
            kind = rec.get("error")
            kind = as_text(kind, _SHORT_MAX) if kind else ("fatal" if outcome == "fatal" else "unknown")
            _bump(agent.error_turns, kind)
            agent.error_turn_count += 1
            _bump(self.run.error_turns, kind)
            self.run.error_turn_count += 1
            error_type = rec.get("errorType")
            if error_type:  # the specific type, kept under its kind
                error_type = as_text(error_type, _SHORT_MAX)
                _bump_type(agent.error_types, kind, error_type)
                _bump_type(self.run.error_types, kind, error_type)

    def _context_breakdown(self, seq, rec, agent):
        bands = breakdown_bands(rec)
        for band, tokens in bands.items():
            _bump(agent.context_bands, band, tokens)
        total = _num(rec.get("totalTokens"))
        agent.last_breakdown = {
            "bands": bands,
            "totalTokens": total if total is not None else _sum(bands.values()),
            "windowLimit": _num(rec.get("windowLimit")),
            "fullness": _num(rec.get("fullness")),
        }

    def _usage(self, seq, rec, agent):
        tokens, cost = rec.get("tokens"), rec.get("cost")
        run = self.run
        add_usage(run.usage, tokens, cost)
        profile = rec.get("profileId") or rec.get("slot") or agent.profile_id
        model = rec.get("modelId") or agent.model_id
        key = f"{as_text(profile)}|{as_text(model)}"
        by_slot = run.usage.setdefault("by_slot", {})
        slot = by_slot.get(key)
        if slot is None:
            slot = by_slot[key] = {"profileId": as_text(profile), "modelId": as_text(model), **empty_usage()}
        add_usage(slot, tokens, cost)
        add_usage(agent.usage, tokens, cost)

    def _slot_usage(self, seq, rec, agent):
        profile = as_text(rec.get("profileId") or rec.get("slot"))
        model = as_text(rec.get("modelId"))
        self.run.slot_usage[f"{profile}|{model}"] = {
            "profileId": profile,
            "modelId": model,
            "tokens": rec.get("tokens"),
            "cost": rec.get("cost"),
        }

    def _api_call(self, seq, rec, agent):
        _bump(agent.api_calls, api_operation(rec))
        agent.open_api_calls += 1
        self.run.call_count += 1

    def _api_result(self, seq, rec, agent):
        if agent.open_api_calls:
            agent.open_api_calls -= 1
        if rec.get("ok") is False:
            cls = failure_class(rec) or UNCLASSIFIED
            _bump(agent.api_failures, cls)
            _bump(self.run.api_failures, cls)

    def _tool_call(self, seq, rec, agent):
        if agent.open_api_calls:  # legacy: a program call bridged inside its api_call bracket
            return
        _bump(agent.tool_calls, as_text(rec.get("name")))
        self.run.call_count += 1

    def _tool_result(self, seq, rec, agent):
        if agent.open_api_calls:
            return
        if rec.get("ok") is False:
            cls = failure_class(rec) or UNCLASSIFIED
            _bump(agent.tool_failures, cls)
            _bump(self.run.tool_failures, cls)

    def _agent_spawned(self, seq, rec, agent):
        profile = rec.get("profileId") or rec.get("slot")
        if profile:
            agent.profile_id = as_text(profile)
        if rec.get("modelId"):
            agent.model_id = as_text(rec["modelId"])
        depth = rec.get("depth")
        if isinstance(depth, int) and not isinstance(depth, bool) and 0 <= depth <= _DEPTH_MAX:
            agent.depth = depth
        for field, key in (("cwd", "cwd"), ("brief", "brief")):
            v = rec.get(key)
            if isinstance(v, str):
                setattr(agent, field, v)
        if isinstance(rec.get("worktree"), str):
            agent.worktree = rec["worktree"][:400]

    def _agent_status(self, seq, rec, agent):
        status = rec.get("status")
        if not status:
            return
        status = as_text(status, 32)
        at = parse_timestamp(rec.get("timestamp"))
        if status == "blocked":
            if agent.blocked_since is None:  # a repeated `blocked` continues the same suspension
                agent.blocked_since = at
        else:
            _resume(agent, at)
        agent.status = status

    def _agent_returned(self, seq, rec, agent):
        _resume(agent, parse_timestamp(rec.get("timestamp")))
        agent.status = "done"
        summary = rec.get("summary")
        agent.returned = summary if isinstance(summary, str) else as_text(summary, 10**6)

    def _agent_transition(self, seq, rec, agent):
        to = rec.get("toAgentId")
        if not to:
            return
        to = as_text(to)
        succ = self._agent(to, seq)
        self.dirty_agents.add(to)
        kind = rec.get("kind")
        succ.transition_kind = as_text(kind, 16)
        modules = rec.get("modules")
        succ.transition_modules = modules if isinstance(modules, list) else []
        self.pred_links[to] = agent.agent_id
        profile = rec.get("profileId") or rec.get("agent")
        if profile and not succ.profile_id:
            succ.profile_id = as_text(profile)
        state = rec.get("state")
        if state and not succ.fsm_state:
            succ.fsm_state = as_text(state)

    def _fsm_state(self, seq, rec, agent):
        fsm = rec.get("fsmId") or rec.get("fsm") or rec.get("machine")
        if fsm:
            agent.fsm_id = as_text(fsm)
        state = rec.get("state")
        if state is not None:
            agent.fsm_state = as_text(state)
        profile = rec.get("profileId") or rec.get("agent")
        if profile and not agent.profile_id:
            agent.profile_id = as_text(profile)

    def _agent_modules(self, seq, rec, agent):
        rows = []
        for position, row in enumerate(as_list(rec.get("modules"))):
            if not isinstance(row, dict):
                continue
            kind = as_text(row.get("kind"), 32)
            enabled = row.get("enabled") is True
            mid = roster_module_id(row, agent.agent_id)
            if enabled and mid:
                self._store(mid, kind, seq)
            scope = row.get("scope")
            rows.append(
                {
                    "kind": kind,
                    "module_id": mid,
                    "store": mid if enabled and mid else None,
                    "enabled": enabled,
                    "origin": as_text(row.get("origin"), 32),
                    "writable": row.get("writable") is not False,
                    "scope": as_text(scope, 32) if scope else "",
                    "ownership": as_text(row.get("ownership"), 16),
                    "position": position,
                }
            )
        self.rosters[agent.agent_id] = rows

    def _agent_surface(self, seq, rec, agent):
        tools = rec.get("tools")
        apis = rec.get("apis")
        withheld = rec.get("withheld")
        agent.surface_reported = True
        agent.execution_mode = as_text(rec.get("executionMode"), 64)
        agent.tools = tools if isinstance(tools, list) else []
        agent.apis = apis if isinstance(apis, list) else []
        agent.withheld = withheld if isinstance(withheld, list) else []
        agent.program_language = as_text(rec.get("programLanguage"), 32)
        agent.doc_view_types = as_text(rec.get("docViewTypes"), 64)
        agent.role = derive_role(agent.tools, agent.apis)

    def _state_snapshot(self, seq, rec, agent):
        etype = rec.get("type")
        kind = STATE_KINDS[etype]
        mid = rec.get("moduleId")
        mid = as_text(mid) if mid else f"legacy:{agent.agent_id}:{kind}"[:_ID_MAX]
        store = self._store(mid, kind, seq)
        store.snapshot_type = etype
        store.snapshot = rec
        store.snapshot_seq = seq
        if mid not in self.new_stores:
            self.dirty_stores.add(mid)

    # -- writing -------------------------------------------------------------------------------

    def flush(self, *, save_run=True, extra_run_fields=()) -> None:
        """Write every row the batch touched, each once; then save the run's rolled-up fields."""
        run = self.run
        if self.new_stores:
            ModuleStore.objects.bulk_create(list(self.new_stores.values()))
        if self.dirty_stores:
            update_rows(ModuleStore, [self.stores[m] for m in self.dirty_stores], _STORE_UPDATE_FIELDS)
        kinds_only = self.dirty_store_kinds - self.dirty_stores
        if kinds_only:
            update_rows(ModuleStore, [self.stores[m] for m in kinds_only], ["kind"])

        relink = []
        if self.new_agents:
            Agent.objects.bulk_create(list(self.new_agents.values()))
            # Children stored by an earlier batch whose parent arrived only now.
            orphans = _in_chunks(
                Agent.objects.filter(run=run, parent__isnull=True).exclude(parent_agent_id=""),
                "parent_agent_id",
                set(self.new_agents),
            )
            for o in orphans:
                if o.agent_id not in self.agents:
                    o.parent_id = self.new_agents[o.parent_agent_id].pk
                    relink.append(o)
        # New agents were inserted with their final state; they need an update only for a link.
        touched = {aid for aid in self.dirty_agents if aid not in self.new_agents}
        for to, pred in self.pred_links.items():
            succ, p = self.agents[to], self.agents[pred]
            if succ.predecessor_id != p.pk:
                succ.predecessor_id = p.pk
                touched.add(to)
        for a in self.agents.values():
            if a.parent_agent_id and a.parent_id is None:
                parent = self.agents.get(a.parent_agent_id)
                if parent is not None and parent.pk is not None and parent is not a:
                    a.parent_id = parent.pk
                    touched.add(a.agent_id)
        to_update = [self.agents[aid] for aid in touched] + relink
        update_rows(Agent, to_update, _AGENT_UPDATE_FIELDS)

        if self.rosters:
            replaced = [self.agents[aid].pk for aid in self.rosters if aid not in self.new_agents]
            if replaced:
                Holding.objects.filter(agent_id__in=replaced).delete()
            holdings = []
            for aid, rows in self.rosters.items():
                agent_pk = self.agents[aid].pk
                for row in rows:
                    store_mid = row.pop("store")
                    holdings.append(
                        Holding(
                            agent_id=agent_pk,
                            store_id=self.stores[store_mid].pk if store_mid else None,
                            **row,
                        )
                    )
            Holding.objects.bulk_create(holdings)

        if save_run:
            run.save(update_fields=RUN_PROJECTION_FIELDS + list(extra_run_fields))

        self.new_agents.clear()
        self.dirty_agents.clear()
        self.new_stores.clear()
        self.dirty_stores.clear()
        self.dirty_store_kinds.clear()
        self.rosters.clear()
        self.pred_links.clear()


_HANDLERS = {
    "session_started": Projector._session_started,
    "session_summary": Projector._session_summary,
    "session_ended": Projector._session_ended,
    "turn_started": Projector._turn_started,
    "turn_outcome": Projector._turn_outcome,
    "context_breakdown": Projector._context_breakdown,
    "usage": Projector._usage,
    "slot_usage": Projector._slot_usage,
    "api_call": Projector._api_call,
    "api_result": Projector._api_result,
    "tool_call": Projector._tool_call,
    "tool_result": Projector._tool_result,
    "agent_spawned": Projector._agent_spawned,
    "agent_status": Projector._agent_status,
    "agent_returned": Projector._agent_returned,
    "agent_transition": Projector._agent_transition,
    "fsm_state": Projector._fsm_state,
    "agent_modules": Projector._agent_modules,
    "agent_surface": Projector._agent_surface,
    **{t: Projector._state_snapshot for t in STATE_KINDS},
}


def update_rows(model, objs, field_names) -> None:
    """UPDATE each of `objs` (saved rows) setting `field_names`: one ``executemany``, one query.

    What ``bulk_update`` does, without building a CASE expression per row and field (which costs
    far more than the write itself on a large batch).
    """
    if not objs:
        return
    fields = [model._meta.get_field(name) for name in field_names]
    qn = connection.ops.quote_name
    sql = "UPDATE {} SET {} WHERE {} = %s".format(
        qn(model._meta.db_table),
        ", ".join(f"{qn(f.column)} = %s" for f in fields),
        qn(model._meta.pk.column),
    )
    params = [
        [f.get_db_prep_save(getattr(obj, f.attname), connection) for f in fields] + [obj.pk] for obj in objs
    ]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def _in_chunks(queryset, field, values, size=500):
    """Rows of `queryset` whose `field` is in `values`, querying at most `size` values at a time."""
    values = list(values)
    out = []
    for i in range(0, len(values), size):
        out.extend(queryset.filter(**{f"{field}__in": values[i : i + size]}))
    return out
