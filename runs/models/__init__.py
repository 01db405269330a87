"""The stored stream and its projections.

`Event` is the source of truth: every record exactly as received, seq 1..n per run. Every other
model here is a fold of the events, written by `runs.ingest.writer.append` in the same transaction and
rebuildable from the log (`manage.py rebuild_projections`).
"""

import secrets
from datetime import timedelta
from pathlib import Path

from django.conf import settings
from django.db import models
from django.utils import timezone

from runs.models.memory import MemoryRevision  # noqa: F401  (its own module: this one is at its size)
from runs.models.pool import PooledMessage  # noqa: F401  (likewise)
from runs.models.saved import SavedConfiguration, SavedView  # noqa: F401  (likewise)
from runs.models.timeline import TimelineBucket, TimelineLane, TurnSpan, WaitSpan  # noqa: F401  (likewise)
from runs.models.refusals import RefusalGroup, RefusalRow  # noqa: F401  (likewise)


class ShownRuns(models.Manager):
    """Runs whose deletion nobody asked for: what every page, feed, search and write sees. A run being
    deleted is gone to them at once; `Run.every` still reaches it (the deletion itself, its name)."""

    def get_queryset(self):
        return super().get_queryset().filter(deletion_requested_at__isnull=True)


class Run(models.Model):
    # The fold's generation: raised (with the migration the new default asks for) whenever a migration
    # adds or changes a projection, so a run folded before it reads as stale until it is rebuilt.
    # 2: the Timeline's lanes, spans and buckets (0024); 3: refusals matched and grouped (0028);
    # 4: the message pool's ledger (0029); 5: the Timeline's buckets mark their calls by slot (0032);
    # 6: usage naming no slot is the session summary's one slot's (0035); 7: a refusal line of an agent
    # that reported no arm read by any arm's spelling (0036)
    FOLD_GENERATION = 7

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        INTERRUPTED = "interrupted"
        # gg's session_ended words (spec/stream.md §4.2); unknown words are kept as-is.
        COMPLETED = "completed"
        EXHAUSTED = "exhausted"
        TIMED_OUT = "timed_out"
        LIMIT_EXCEEDED = "limit_exceeded"
        CANCELED = "canceled"
        MODEL_ERROR = "model_error"
        AUTH_ERROR = "auth_error"
        HOOK_ERROR = "hook_error"
        COMPACTION_FAILED = "compaction_failed"
        INTERNAL_ERROR = "internal_error"
        ERROR = "error"

    class Source(models.TextChoices):
        IMPORT = "import"  # manage.py ingest / the upload form
        API = "api"  # POST /api/runs/<run>/events
        ENGINE = "engine"  # launched on the built-in engine
        GG = "gg"  # launched on an external gg binary

    name = models.CharField(max_length=200, unique=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.IMPORT)
    status = models.CharField(max_length=32, default=Status.RUNNING, db_index=True)
    session_id = models.CharField(max_length=200, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)  # first gg timestamp seen
    ended_at = models.DateTimeField(null=True, blank=True)  # session_ended's gg timestamp
    session_started_seq = models.PositiveBigIntegerField(null=True, blank=True)  # its session_started, once arrived
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )

    # What the run was declared with: session_started.capabilitySet, or the launch spec.
    capability_set = models.JSONField(null=True, blank=True)
    launch_spec = models.JSONField(null=True, blank=True)  # engine runs: the whole launch request
    summary = models.JSONField(null=True, blank=True)  # session_summary.summary
    cancel_requested = models.BooleanField(default=False)
    # Why a run ended outside its stream: interrupted by a server stop, marked ended by an operator.
    end_reason = models.CharField(max_length=300, blank=True)
    # Set when an operator deletes the run: the records go in the background (runs.ingest.deletion).
    deletion_requested_at = models.DateTimeField(null=True, blank=True, editable=False)
    deletion_stopped = models.CharField(max_length=300, blank=True, editable=False)  # why its last try failed

    # Rolled-up figures (projections).
    fold_generation = models.PositiveIntegerField(default=FOLD_GENERATION)  # the fold that made them
    last_seq = models.PositiveBigIntegerField(default=0)
    rejected_count = models.PositiveIntegerField(default=0)
    agent_count = models.PositiveIntegerField(default=0)
    turn_count = models.PositiveIntegerField(default=0)
    call_count = models.PositiveIntegerField(default=0)  # api_call + tool_call openings
    error_turn_count = models.PositiveIntegerField(default=0)
    error_turns = models.JSONField(default=dict, blank=True)  # {error kind: n}
    error_types = models.JSONField(default=dict, blank=True)  # {error kind: {errorType: n}}
    tool_failures = models.JSONField(default=dict, blank=True)  # {failure class: n}
    api_failures = models.JSONField(default=dict, blank=True)  # {failure class: n}; never summed with tools
    # turn_outcome's streak and loop aborts: {maxConsecutive, loopAborts, loopAbortWords, loopAbortChars}
    error_facts = models.JSONField(default=dict, blank=True)
    usage = models.JSONField(default=dict, blank=True)  # summed usage deltas: tokens + cost
    slot_usage = models.JSONField(default=dict, blank=True)  # {"profile|model": latest rollup}

    objects = ShownRuns()
    every = models.Manager()

    class Meta:
        ordering = ["-created_at", "-id"]

    @property
    def stale(self):
        """Folded by an older fold: projections added since are missing until it is rebuilt."""
        return self.fold_generation < self.FOLD_GENERATION

    def __str__(self):
        return self.name

    @property
    def is_live(self):
        return self.status in (self.Status.QUEUED, self.Status.RUNNING)

    @property
    def workspace_dir(self) -> Path:
        """A launched run's working directory (`runs.engine.run_workspace` fills it; its deletion empties it)."""
        return Path(settings.VAR_DIR) / "workspaces" / str(self.pk)


class Agent(models.Model):
    """One incarnation: root, a subagent, a successor (exec / fsm) or a fork's copy."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="agents")
    agent_id = models.CharField(max_length=200)
    parent_agent_id = models.CharField(max_length=200, blank=True)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="children"
    )
    predecessor = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="successors"
    )
    transition_kind = models.CharField(max_length=16, blank=True)  # exec | fork | fsm
    transition_modules = models.JSONField(default=list, blank=True)  # the predecessor's agent_transition.modules
    fsm_id = models.CharField(max_length=200, blank=True)
    fsm_state = models.CharField(max_length=200, blank=True)
    issue_id = models.CharField(max_length=200, blank=True)
    profile_id = models.CharField(max_length=200, blank=True)
    model_id = models.CharField(max_length=200, blank=True)
    depth = models.PositiveIntegerField(default=0)
    cwd = models.TextField(blank=True)
    brief = models.TextField(blank=True)
    worktree = models.CharField(max_length=400, blank=True)
    worktree_outcome = models.CharField(max_length=16, blank=True)  # worktree_merged: merged | conflict | discarded
    status = models.CharField(max_length=32, default="running")
    waiting_on = models.CharField(max_length=200, blank=True)  # agent_status.waitingOn, while blocked
    returned = models.TextField(blank=True)  # agent_returned.summary
    role = models.CharField(max_length=32, blank=True)  # standard | review | judge, from the endings offered

    # The reported surface (agent_surface), as reported: never recomputed.
    surface_reported = models.BooleanField(default=False)
    execution_mode = models.CharField(max_length=64, blank=True)
    program_language = models.CharField(max_length=32, blank=True)
    doc_view_types = models.CharField(max_length=64, blank=True)
    tools = models.JSONField(default=list, blank=True)  # agent_surface.tools
    apis = models.JSONField(default=list, blank=True)  # agent_surface.apis
    withheld = models.JSONField(default=list, blank=True)  # mid-era agent_surface.withheld

    # Counts, keyed the way the pages join them; counted on the opening half of each pair.
    turns = models.PositiveIntegerField(default=0)
    api_calls = models.JSONField(default=dict, blank=True)  # {operation: n}
    tool_calls = models.JSONField(default=dict, blank=True)  # {tool name: n}
    api_failures = models.JSONField(default=dict, blank=True)  # {failure class: n}
    tool_failures = models.JSONField(default=dict, blank=True)  # {failure class: n}
    error_turns = models.JSONField(default=dict, blank=True)  # {error kind: n}
    error_types = models.JSONField(default=dict, blank=True)  # {error kind: {errorType: n}}
    error_turn_count = models.PositiveIntegerField(default=0)
    error_facts = models.JSONField(default=dict, blank=True)  # as Run.error_facts, this agent's
    usage = models.JSONField(default=dict, blank=True)  # this agent's summed usage deltas (same shape as Run.usage)
    open_api_calls = models.PositiveIntegerField(default=0)  # api_call brackets still open (legacy bridged tool pairs)
    open_api_call = models.CharField(max_length=200, blank=True)  # the call the open bracket names
    # Legacy: each api call ({object, function} or operation) with the tools bridged inside its bracket
    # ({call: {tool: n}}), gg's pre-operation join of a program's calls to the tools behind them.
    api_tools = models.JSONField(default=dict, blank=True)

    # Context (context_breakdown): {band: tokens} summed over the agent's turns, and its latest
    # breakdown ({bands: {band: tokens}, totalTokens, windowLimit, fullness}), so the Arms and Stores
    # pages and the report never re-read the log.
    context_bands = models.JSONField(default=dict, blank=True)
    last_breakdown = models.JSONField(null=True, blank=True)

    # Suspended time (agent_status blocked -> its next status): closed suspensions summed, and the
    # stamp of the open one, if the agent is blocked now.
    suspended = models.DurationField(default=timedelta(0))
    blocked_since = models.DateTimeField(null=True, blank=True)
    first_seq = models.PositiveBigIntegerField(default=0)
    # Its latest memory_state's store, else its roster's: where its memory_revisions (naming none) go.
    memory_store = models.CharField(max_length=200, blank=True)
    # Call pairing between chunks and generated tokens over model time (runs.stream.call_times).
    timing = models.JSONField(default=dict, blank=True)
    # The agent's first and latest gg stamps, verbatim (its own working span, for the active clock).
    first_timestamp = models.CharField(max_length=64, blank=True)
    last_timestamp = models.CharField(max_length=64, blank=True)
    material = models.JSONField(default=dict, blank=True)  # its windows' cost by residency (runs.stream.material)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "agent_id"], name="agent_unique_per_run")]
        ordering = ["first_seq", "id"]

    def __str__(self):
        return self.agent_id

    @property
    def call_surface(self) -> str:
        """Which record the agent's calls are read from: "api" for a code agent, "tool" for a
        tool-calling one, else whichever has evidence, its calls or its failure tallies (console.md
        §1.4, callRecordSurface / callFailureSurface); "" with none."""
        if self.execution_mode == "responses_as_code":
            return "api"
        if self.execution_mode == "tool_calling":
            return "tool"
        if self.api_calls or self.api_failures:
            return "api"
        return "tool" if self.tool_calls or self.tool_failures else ""

    @property
    def surface_calls(self) -> dict:
        """{operation or tool: n} on the agent's own surface: a legacy program's tools bridged inside
        its api calls are counted under the tools, never a second time here."""
        return self.api_calls if self.call_surface == "api" else self.tool_calls

    @property
    def call_count(self):
        return sum(self.surface_calls.values())


class ModuleStore(models.Model):
    """A store, keyed by gg's moduleId (`memories-0`); holders are the agents reporting it."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="stores")
    module_id = models.CharField(max_length=200)
    kind = models.CharField(max_length=32)
    snapshot_type = models.CharField(max_length=32, blank=True)  # memory_state, tasks_state, ...
    snapshot = models.JSONField(null=True, blank=True)  # the latest *_state record naming this store
    snapshot_seq = models.PositiveBigIntegerField(default=0)
    first_seq = models.PositiveBigIntegerField(default=0)
    peak = models.JSONField(null=True, blank=True)  # a memory store's {count, totalLen, totalLines} at their largest

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "module_id"], name="store_unique_per_run")
        ]
        ordering = ["kind", "module_id"]

    def __str__(self):
        return self.module_id


class Holding(models.Model):
    """One `agent_modules` row: what one incarnation holds of one kind (disabled kinds too)."""

    agent = models.ForeignKey(Agent, on_delete=models.CASCADE, related_name="holdings")
    kind = models.CharField(max_length=32)
    store = models.ForeignKey(
        ModuleStore, null=True, blank=True, on_delete=models.SET_NULL, related_name="holdings"
    )
    module_id = models.CharField(max_length=200, blank=True)
    enabled = models.BooleanField(default=False)
    origin = models.CharField(max_length=32, blank=True)
    writable = models.BooleanField(default=True)
    scope = models.CharField(max_length=32, blank=True)
    ownership = models.CharField(max_length=16, blank=True)  # mid-era owned | unowned
    position = models.PositiveSmallIntegerField(default=0)  # kind order as reported

    class Meta:
        ordering = ["agent_id", "position"]


class Event(models.Model):
    """One stored record, exactly as received (`raw`), with the columns the pages filter on."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="events")
    seq = models.PositiveBigIntegerField()
    type = models.CharField(max_length=64)  # the gg type; for a non-gg host record, "host:<kind>"
    agent_id = models.CharField(max_length=200, blank=True)
    timestamp = models.CharField(max_length=64, blank=True)  # gg's own RFC 3339 stamp, verbatim
    received_at = models.DateTimeField(default=timezone.now)  # set once per appended batch
    raw = models.TextField()  # the line as received
    digest = models.CharField(max_length=64)  # sha256 of raw: re-import idempotency

    operation = models.CharField(max_length=200, blank=True)
    tool_name = models.CharField(max_length=200, blank=True)
    ok = models.BooleanField(null=True)
    failure = models.CharField(max_length=64, blank=True)
    turn = models.PositiveIntegerField(null=True)  # the agent's turn number at this event
    call_ms = models.FloatField(null=True)  # on a call's result: ms since its opening half (the fold pairs them)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="event_seq_per_run")]
        indexes = [
            models.Index(fields=["run", "type", "seq"]),
            models.Index(fields=["run", "agent_id", "seq"]),
            # An agent's records of one type, latest first (the agent page's windows), however many
            # records the run's other agents and types hold.
            models.Index(fields=["run", "agent_id", "type", "seq"]),
            # A turn's records (the turn and conversation pages, a record's turn), without walking
            # every record of a long-lived agent.
            models.Index(fields=["run", "agent_id", "turn", "seq"]),
            # A turn's first turn_started, whichever agent's (the feed's jump to a turn), without
            # walking the run's turns in seq order: turn_started rows only, a few in a hundred.
            models.Index(fields=["run", "turn", "seq"], condition=models.Q(type="turn_started"),
                         name="event_turn_started"),
            models.Index(fields=["run", "digest"]),
        ]
        ordering = ["run", "seq"]

    def __str__(self):
        return f"{self.run_id}#{self.seq} {self.type}"


class FeedCheckpoint(models.Model):
    """What feed rows read from the log before them (`runs.feed.state`), as of every
    `runs.feed.checkpoints.EVERY`-th seq: a page opens anywhere in a run of any size by folding at
    most that many events. Kept by the write path in the transaction that stores the events."""

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="feed_checkpoints")
    seq = models.PositiveBigIntegerField()
    open_calls = models.JSONField(default=dict)  # agent id -> the seq of the api_call its open bracket began at
    surfaces = models.JSONField(default=dict)  # agent id -> the seq of its latest agent_surface
    rows = models.PositiveBigIntegerField(default=0)  # events up to seq with a feed row of their own

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "seq"], name="feed_checkpoint_per_seq")]


class RejectedLine(models.Model):
    RAW_LIMIT = 4096

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="rejected_lines")
    line_number = models.PositiveBigIntegerField()
    reason = models.CharField(max_length=300)
    raw = models.TextField(blank=True)  # the first RAW_LIMIT characters
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["run", "line_number"]


def _new_token():
    return secrets.token_urlsafe(32)


class IngestToken(models.Model):
    """Bearer token for POST /api/runs/<run>/events (a process pushing a live stream)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    key = models.CharField(max_length=64, unique=True, default=_new_token)
    label = models.CharField(max_length=200, blank=True)
    run_names = models.TextField(blank=True, help_text="One run name per line: the token writes only into these runs "
                                 "(and creates them). Empty: any run its user created.")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self):
        return f"{self.label or 'token'} ({self.user})"

    def scope(self) -> list[str]:
        """The run names this token is limited to (empty: not limited by name)."""
        return [name.strip() for name in self.run_names.splitlines() if name.strip()]


class RunFacts(models.Model):
    """What the runs list filters and sorts on and the analysis reads, one row per run: a fold of the
    run's projections kept by the write path (`runs.ingest.facts.refresh`), so a list of 10,000 runs
    never reads an agent or an event. Agent-level sets are stored as ``|a|b|`` text so one LIKE
    filters them on SQLite and PostgreSQL alike."""

    run = models.OneToOneField(Run, primary_key=True, on_delete=models.CASCADE, related_name="facts")
    seq = models.PositiveBigIntegerField(default=0)  # the run's last_seq these facts were folded at
    search = models.TextField(blank=True)  # lowercased name, session id, task, models, profiles
    task = models.TextField(blank=True)
    execution_modes = models.TextField(blank=True)
    languages = models.TextField(blank=True)
    doc_view_types = models.TextField(blank=True)
    model_ids = models.TextField(blank=True)
    profile_slugs = models.TextField(blank=True)
    divergences = models.PositiveIntegerField(default=0)
    refusals = models.PositiveIntegerField(default=0)
    refusals_by_agent = models.JSONField(default=dict, blank=True)  # {agent id: {operation: n}}
    peak_context = models.JSONField(default=dict, blank=True)  # {agent id: the largest totalTokens reported}
    # The run's agents summed per profile, model, mode, language and docViewTypes: what the analysis
    # groups (runs.ingest.facts.agent_sums), so a study of 1,000 runs decodes one document per run.
    agents = models.JSONField(default=list, blank=True)
    failed_calls = models.PositiveIntegerField(default=0)  # tool + API failures (the list sorts on it)
    total_tokens = models.BigIntegerField(null=True, blank=True)
    cost = models.FloatField(null=True, blank=True)  # comparable cost
    duration_seconds = models.FloatField(null=True, blank=True)
    last_event_at = models.DateTimeField(null=True, blank=True)  # when the write path last stored a record

    def __str__(self):
        return f"facts of {self.run_id}"
