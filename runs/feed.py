"""The live activity feed: stored events turned into the rows gg's console shows.

Rows follow spec/stream.md §7.2 and spec/console.md §1.4: one function per event family, each
returning a `Row` (or None: that event drives panels, not the feed). Calls are spelled the way
the agent wrote them (§7.3) through `surfaces.arms.spelling_for`, resolved once per agent and
operation from a per-connection cache of the run's agents' reported surfaces.

Everything here is plain data: the template (`runs/_feed_rows.html`) escapes it.
"""

import json
from dataclasses import dataclass

from django.db.models import Max
from django.template.loader import render_to_string

from runs.models import Agent, Event, Run
from surfaces.arms import spelling_for

BATCH = 200  # events read and sent per socket message
ARGS_LIMIT = 160  # compact JSON arguments, as gg's console cuts them

# The kinds the filter offers (a row's `kind`), in the order the page lists them.
KINDS = {
    "session": "session",
    "turn": "turns",
    "message": "messages",
    "call": "calls",
    "tool": "tool calls",
    "log": "log lines",
    "context": "context",
    "handoff": "successions",
    "output": "program output",
    "system": "host setup",
    "other": "other",
}

# gg kinds that drive panels rather than feed rows (console.md §1.4, "no row"), plus kinds
# older streams carry (stream.md §10). Anything outside these and the rendered kinds is an
# unknown type: shown raw rather than dropped.
PANEL_KINDS = frozenset(
    """usage slot_usage context_breakdown context_message prompt turn_timing turn_outcome
    response_rejected shell agent_spawned agent_modules agent_surface agent_status agent_returned
    skills_state memory_state memory_revision tasks_state board_state archive_state issue_review
    worktree_merged limit_exceeded provider_fault provider_switch session_summary
    planning speculation""".split()
)


@dataclass
class Row:
    seq: int
    agent: str
    kind: str  # filter key (KINDS)
    label: str
    detail: str
    tone: str  # system | agent | tool | ok | fail | warn | compact | handoff
    timestamp: str = ""
    args: str = ""
    failure: str = ""
    output: str = ""  # program output (console.* lines), shown collapsed

    @property
    def time(self):
        # RFC 3339 "2026-07-24T04:34:39.06Z" -> "04:34:39"; anything else as written.
        return self.timestamp[11:19] if len(self.timestamp) >= 19 and self.timestamp[10] == "T" else self.timestamp


def record_of(event):
    """The gg record inside a stored event: the line itself, or a host carry's `event`."""
    try:
        record = json.loads(event.raw)
    except ValueError:
        return {}
    if not isinstance(record, dict):
        return {}
    inner = record.get("event")
    if record.get("type") == "gg" and isinstance(inner, dict):
        return inner
    return record


def compact(value, limit=ARGS_LIMIT):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tokens(n):
    """12300 -> "12.3k" (gg's console figure)."""
    if not isinstance(n, (int, float)):
        return "?"
    return f"{n / 1000:.1f}k" if n >= 1000 else f"{n:g}"


def plural(n, one, many):
    return f"{n} {one if n == 1 else many}"


class AgentSurfaces:
    """The run's agents' reported surfaces, read once per connection; one agent is read again
    when its `agent_surface` passes or when it first appears after the cache was filled."""

    def __init__(self, run_pk):
        self.run_pk = run_pk
        self.agents = None  # agent_id -> (apis, program_language); None until the first event
        self.missing = set()  # agents with no Agent row (host records): not looked up twice
        self.profiles = {}  # profile slug -> display name, from session_started.capabilitySet
        self.spellings = {}  # (agent_id, operation) -> spelling

    def _rows(self, **filters):
        return Agent.objects.filter(run_id=self.run_pk, **filters).values_list("agent_id", "apis", "program_language")

    def _load_profiles(self):
        capability_set = Run.objects.filter(pk=self.run_pk).values_list("capability_set", flat=True).first()
        profiles = capability_set.get("agents") if isinstance(capability_set, dict) else None
        self.profiles = {
            p.get("slug") or p.get("name"): p.get("name") or p.get("slug")
            for p in profiles or []
            if isinstance(p, dict) and (p.get("slug") or p.get("name"))
        }

    def _load_agent(self, agent_id):
        self.spellings = {k: v for k, v in self.spellings.items() if k[0] != agent_id}
        row = self._rows(agent_id=agent_id).first()
        if row is None:
            self.missing.add(agent_id)
        else:
            self.agents[agent_id] = (row[1] or [], row[2] or "")

    def see(self, event):
        """Called for every event before it is rendered."""
        if self.agents is None:
            self.agents = {agent_id: (apis or [], language or "") for agent_id, apis, language in self._rows()}
            self._load_profiles()
        elif event.type == "session_started":
            self._load_profiles()
        if event.type == "agent_surface" or (event.agent_id not in self.agents and event.agent_id not in self.missing):
            self._load_agent(event.agent_id)

    @property
    def multi_agent(self):
        return len(self.agents or ()) > 1

    def spell(self, agent_id, operation):
        key = (agent_id, operation)
        if key not in self.spellings:
            apis, language = self.agents.get(agent_id, ([], ""))
            self.spellings[key] = spelling_for(apis, language, operation)
        return self.spellings[key]

    def profile(self, slug):
        return self.profiles.get(slug, slug)


# --- one function per event family: (renderer, event, record) -> Row | None -----------------


def _session(ctx, ev, rec):
    if ev.type == "session_started":
        return ctx.row(ev, "session", "session", "Session started.", "system")
    status = rec.get("status") or "?"
    return ctx.row(ev, "session", "session", f"Session ended: {status}.", "ok" if status == "completed" else "fail")


def _turn(ctx, ev, rec):
    return ctx.row(ev, "turn", "turn", "Turn started.", "system")


def _message(ctx, ev, rec):
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    return ctx.row(ev, "message", "agent", text, "agent")


def _tool(ctx, ev, rec):
    if ev.agent_id in ctx.open_calls:
        return None  # legacy: a program call bridged inside its api_call bracket (§10)
    name = str(rec.get("name") or ev.tool_name or "?")
    if ev.type == "tool_call":
        return ctx.row(ev, "tool", "tool", name, "tool", args=compact(rec.get("args", {})))
    summary = rec.get("summary")
    return ctx.result_row(ev, "tool", f"{name}: {summary}" if summary else name, rec)


def _api(ctx, ev, rec):
    operation = rec.get("operation")  # not ev.operation: a legacy pair never joins a surface
    if isinstance(operation, str) and operation:
        spelled = ctx.surfaces.spell(ev.agent_id, operation)
    else:
        spelled = _legacy_spelling(rec)
    if ev.type == "api_call":
        return ctx.row(ev, "call", "call", spelled, "tool")
    summary = rec.get("summary")
    return ctx.result_row(ev, "call", f"{spelled}: {summary}" if summary else spelled, rec)


def _legacy_spelling(rec):
    # Older streams: {object, function} with no operation (stream.md §10); `object` is the
    # legacy grouping (`fs`), sometimes an object naming it.
    obj, fn = rec.get("object"), rec.get("function")
    if isinstance(obj, dict):
        obj = obj.get("name") or obj.get("key")
    if isinstance(fn, dict):
        fn = fn.get("name") or fn.get("key")
    parts = [str(p) for p in (obj, fn) if p]
    return ".".join(parts) or "?"


def _log(ctx, ev, rec):
    level = str(rec.get("level") or "info")
    tone = {"error": "fail", "warn": "warn", "warning": "warn"}.get(level, "system")
    return ctx.row(ev, "log", level, str(rec.get("message", "")), tone)


def _compaction(ctx, ev, rec):
    detail = f"Context compacted: {tokens(rec.get('beforeTokens'))} → {tokens(rec.get('afterTokens'))} tokens."
    retained = rec.get("retained") if isinstance(rec.get("retained"), dict) else {}
    kept = [
        plural(retained[key], one, many)
        for key, one, many in (("skills", "skill", "skills"), ("tasks", "task", "tasks"), ("memories", "memory", "memories"))
        if isinstance(retained.get(key), int)
    ]
    return ctx.row(ev, "context", "compacted", detail, "compact", args=("retained " + " / ".join(kept)) if kept else "")


CONTEXT_LABELS = {
    "evict_file_views": "evict",
    "close_text_views": "close",
    "close_docs_views": "close docs",
    "close_search_views": "close search",
    "archive_thread": "archive",
}


def _context_managed(ctx, ev, rec):
    action = str(rec.get("action") or "?")
    args = f"reclaimed {tokens(rec.get('reclaimedTokens'))} tokens · {plural(rec.get('items', 0), 'item', 'items')}"
    return ctx.row(ev, "context", CONTEXT_LABELS.get(action, action), str(rec.get("detail") or action), "compact", args=args)


DISPOSITION_WORDS = (("carried", "carried"), ("copied", "copied"), ("linked", "linked"), ("dropped", "dropped"), ("initialized", "fresh"))


def _transition(ctx, ev, rec):
    kind = rec.get("kind")
    to = rec.get("toAgentId") or "?"
    profile = ctx.surfaces.profile(rec.get("profileId") or rec.get("agent") or "?")
    state = rec.get("state")
    if kind == "fork":
        label, detail = "fork", f"Forked a copy of this agent as {to}."
    elif kind == "fsm":
        label, detail = "handoff", f"Transitioned to `{state}` ({profile}) as {to}."
    elif state:
        label, detail = "handoff", f"Continued as `{profile}` in `{state}` ({to})."
    else:
        label, detail = "handoff", f"Continued as `{profile}` ({to})."
    modules = [m for m in rec.get("modules") or [] if isinstance(m, dict)]
    fates = []
    for disposition, word in DISPOSITION_WORDS:
        kinds = [str(m.get("kind")) for m in modules if m.get("disposition") == disposition]
        if kinds:
            fates.append(f"{word} {', '.join(kinds)}")
    return ctx.row(ev, "handoff", label, detail, "handoff", args=" · ".join(fates))


def _fsm_state(ctx, ev, rec):
    state = rec.get("state") or "?"
    detail = f"Entered `{state}`"
    if rec.get("from"):
        detail += f" from `{rec['from']}`"
    profile = rec.get("profileId") or rec.get("agent")  # `agent`: the mid-era shape
    detail += f", running {ctx.surfaces.profile(profile)}." if profile else "."
    machine = rec.get("fsmId") or rec.get("fsm") or rec.get("machine")
    return ctx.row(ev, "handoff", "state", detail, "handoff", args=f"machine {machine}" if machine else "")


def _code_execution(ctx, ev, rec):
    logs = [str(line) for line in rec.get("logs") or []]
    if not logs:
        return None
    args = plural(len(logs), "line", "lines")
    dropped = rec.get("logsSuppressed")
    if dropped:
        args += f" · {plural(dropped, 'earlier line', 'earlier lines')} dropped by the capture cap"
    return ctx.row(ev, "output", "output", "Program output", "system", args=args, output="\n".join(logs))


def _host_system(ctx, ev, rec):
    # The orchestrator's setup/teardown rows (stream.md §1.1); other host kinds are gg's twins.
    parts = [str(rec.get(k)) for k in ("stage", "status") if rec.get(k)]
    detail = " ".join(parts) + (f": {rec['message']}" if rec.get("message") else "")
    tone = "fail" if rec.get("status") == "failed" else "system"
    return ctx.row(ev, "system", "system", detail or "system", tone)


def _unknown(ctx, ev, rec):
    return ctx.row(ev, "other", ev.type, "Unrecognised event, shown as received.", "system", args=compact(rec, 400))


RENDERERS = {
    "session_started": _session,
    "session_ended": _session,
    "turn_started": _turn,
    "assistant_message": _message,
    "tool_call": _tool,
    "tool_result": _tool,
    "api_call": _api,
    "api_result": _api,
    "log": _log,
    "compaction": _compaction,
    "context_managed": _context_managed,
    "agent_transition": _transition,
    "fsm_state": _fsm_state,
    "code_execution": _code_execution,
    "host:system": _host_system,
}


# What opens and force-closes an agent's api_call bracket (console.md §1.4, steps 2-5).
BRACKET_TYPES = ("api_call", "api_result", "turn_started", "code_execution", "turn_outcome",
                 "session_ended", "agent_transition")


class FeedRenderer:
    """Per-connection: renders stored events into rows, keeping the agents' surfaces cached."""

    def __init__(self, run_pk):
        self.run_pk = run_pk
        self.surfaces = AgentSurfaces(run_pk)
        self.open_calls = None  # agents inside an api_call bracket; read on the first batch

    def _open_calls_at(self, seq):
        """Agents whose last bracket event at or before `seq` is an api_call (resuming mid-run)."""
        if not seq:
            return set()
        last = (
            Event.objects.filter(run_id=self.run_pk, seq__lte=seq, type__in=BRACKET_TYPES)
            .order_by().values("agent_id").annotate(last=Max("seq")).values_list("last", flat=True)
        )
        return set(
            Event.objects.filter(run_id=self.run_pk, seq__in=list(last), type="api_call")
            .values_list("agent_id", flat=True)
        )

    def row(self, ev, kind, label, detail, tone, **extra):
        return Row(seq=ev.seq, agent=ev.agent_id or "root", kind=kind, label=label, detail=detail,
                   tone=tone, timestamp=ev.timestamp, **extra)

    def result_row(self, ev, kind, detail, rec):
        ok = rec.get("ok", ev.ok)
        if ok is False:
            failure = ev.failure  # the class, as the write path read it (kebab-case, §6)
            return self.row(ev, kind, "result ✗", detail, "fail", failure=failure)
        return self.row(ev, kind, "result", detail, "ok")

    def rows(self, events):
        out = []
        for ev in events:
            self.surfaces.see(ev)
            if ev.type not in PANEL_KINDS and (ev.type in RENDERERS or not ev.type.startswith("host:")):
                row = RENDERERS.get(ev.type, _unknown)(self, ev, record_of(ev))
                if row is not None:
                    out.append(row)
            if ev.type == "api_call":
                self.open_calls.add(ev.agent_id)
            elif ev.type in BRACKET_TYPES:
                self.open_calls.discard(ev.agent_id)
        return out

    def next_batch(self, after, limit=BATCH):
        """Rows for the next `limit` stored events after seq `after`, and the seq read up to
        (== `after` when nothing new is stored)."""
        events = list(
            Event.objects.filter(run_id=self.run_pk, seq__gt=after)
            .order_by("seq")
            .only("seq", "type", "agent_id", "timestamp", "raw", "operation", "tool_name", "ok", "failure")[:limit]
        )
        if not events:
            return [], after
        if self.open_calls is None:
            self.open_calls = self._open_calls_at(after)
        return self.rows(events), events[-1].seq

    def render(self, rows, cursor):
        return render_to_string(
            "runs/_feed_rows.html",
            {"rows": rows, "cursor": cursor, "run_pk": self.run_pk, "multi_agent": self.surfaces.multi_agent},
        )


def run_state(run_pk):
    """(exists, still live?) — the feed closes once an ended run's last event is sent."""
    status = Run.objects.filter(pk=run_pk).values_list("status", flat=True).first()
    if status is None:
        return False, False
    return True, status in (Run.Status.QUEUED, Run.Status.RUNNING)
