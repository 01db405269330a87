"""The live activity feed: stored events turned into the rows gg's console shows.

Rows follow spec/stream.md §7.2 and spec/console.md §1.4: one function per event family, each
returning a `Row` (or None: that event drives panels, not the feed). Calls are spelled the way
the agent wrote them (§7.3) through `surfaces.arms.spelling_for`, from the surface that agent had
reported by then.

A row depends only on its event and on a `FeedState`: a fold of the log up to the event before
it. So a window of rows is the same whoever reads it, from whichever cursor, whenever — which is
what lets the feed read and render each window once per process (`runs.feed.consumer.Windows`).

Everything here is plain data until `render_rows`, which escapes every field.
"""

import json
from html import escape
from collections import namedtuple
from dataclasses import dataclass

from django.db.models import Max
from django.urls import NoReverseMatch, reverse

from runs.models import Agent, Event, Run
from runs.ingest.projections import as_text
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
    # The agent chip's link: None while the run has one agent (no chip), "" for an agent no URL
    # can name (a chip without a link).
    href: str | None = None

    @property
    def time(self):
        # RFC 3339 "2026-07-24T04:34:39.06Z" -> "04:34:39"; anything else as written.
        return self.timestamp[11:19] if len(self.timestamp) >= 19 and self.timestamp[10] == "T" else self.timestamp


def record_of(raw):
    """The gg record inside a stored event's line: the line itself, or a host carry's `event`."""
    try:
        record = json.loads(raw)
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


def listed(value):
    """A record's list field, or nothing when it holds anything else."""
    return value if isinstance(value, list) else []


def plural(n, one, many):
    return f"{n} {one if n == 1 else many}"


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
        spelled = ctx.spell(ev.agent_id, operation)
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
    profile = ctx.profile(rec.get("profileId") or rec.get("agent") or "?")
    state = rec.get("state")
    if kind == "fork":
        label, detail = "fork", f"Forked a copy of this agent as {to}."
    elif kind == "fsm":
        label, detail = "handoff", f"Transitioned to `{state}` ({profile}) as {to}."
    elif state:
        label, detail = "handoff", f"Continued as `{profile}` in `{state}` ({to})."
    else:
        label, detail = "handoff", f"Continued as `{profile}` ({to})."
    modules = [m for m in listed(rec.get("modules")) if isinstance(m, dict)]
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
    detail += f", running {ctx.profile(profile)}." if profile else "."
    machine = rec.get("fsmId") or rec.get("fsm") or rec.get("machine")
    return ctx.row(ev, "handoff", "state", detail, "handoff", args=f"machine {machine}" if machine else "")


def _code_execution(ctx, ev, rec):
    logs = [str(line) for line in listed(rec.get("logs"))]
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

# The Event columns a row reads, fetched as tuples (no model instances).
Ev = namedtuple("Ev", "seq type agent_id timestamp raw tool_name ok failure")


def _surface(rec):
    """(apis, language) from an agent_surface record, as the projection stores them."""
    apis = rec.get("apis")
    return (apis if isinstance(apis, list) else [], as_text(rec.get("programLanguage"), 32))


def _profiles(capability_set):
    profiles = listed(capability_set.get("agents")) if isinstance(capability_set, dict) else []
    named = {}
    for p in profiles:
        if isinstance(p, dict):
            slug, name = (p.get(k) if isinstance(p.get(k), str) else "" for k in ("slug", "name"))
            if slug or name:
                named[slug or name] = name or slug
    return named


class FeedState:
    """What rows show besides their own event, as of seq `seq` (everything up to it folded in)."""

    def __init__(self, run_pk, seq=0, open_calls=(), surfaces=None, profiles=None, agents=(), multi_from=None):
        self.run_pk = run_pk
        self.seq = seq
        self.open_calls = set(open_calls)  # agents inside an api_call bracket
        self.surfaces = dict(surfaces or {})  # agent_id -> (apis, language), the latest reported
        self.profiles = dict(profiles or {})  # profile slug -> display name (capabilitySet.agents)
        self.agents = set(agents)  # the run's agents so far (its Agent rows), until a second one
        # The seq from which the run has more than one agent: rows from there on name their agent.
        self.multi_from = multi_from
        self.spellings = {}  # (agent_id, operation) -> spelling, for the current surfaces
        self.hrefs = {}  # agent_id -> its page

    @classmethod
    def at(cls, run_pk, seq):
        """The state after seq `seq`, read from the database (resuming mid-run)."""
        capability_set = Run.objects.filter(pk=run_pk).values_list("capability_set", flat=True).first()
        if not seq:
            return cls(run_pk, 0, profiles=_profiles(capability_set))
        upto = Event.objects.filter(run_id=run_pk, seq__lte=seq).order_by()
        # Each agent's last bracket event and last agent_surface at or before `seq`.
        last_bracket = upto.filter(type__in=BRACKET_TYPES).values("agent_id").annotate(last=Max("seq")).values("last")
        last_surface = upto.filter(type="agent_surface").values("agent_id").annotate(last=Max("seq")).values("last")
        open_calls = Event.objects.filter(run_id=run_pk, seq__in=last_bracket, type="api_call").values_list("agent_id", flat=True)
        surfaces = {
            agent_id: _surface(record_of(raw))
            for agent_id, raw in Event.objects.filter(run_id=run_pk, seq__in=last_surface).values_list("agent_id", "raw")
        }
        agents = list(Agent.objects.filter(run_id=run_pk, first_seq__lte=seq).order_by("first_seq", "id")
                      .values_list("agent_id", "first_seq")[:2])
        multi_from = agents[1][1] if len(agents) > 1 else None
        return cls(run_pk, seq, open_calls, surfaces, _profiles(capability_set), [a for a, _ in agents], multi_from)

    def copy(self):
        twin = FeedState(self.run_pk, self.seq, self.open_calls, self.surfaces, self.profiles, self.agents,
                         self.multi_from)
        twin.spellings = dict(self.spellings)
        twin.hrefs = dict(self.hrefs)
        return twin

    def before(self, ev, rec):
        """Fold what a row reads from its own event (a surface reported now spells calls now)."""
        if self.multi_from is None:
            # Where the write path creates Agent rows (runs.ingest.projections): every gg record's agent,
            # and an agent_transition's successor.
            if not ev.type.startswith("host:"):
                self.agents.add(ev.agent_id)
            if ev.type == "agent_transition" and rec.get("toAgentId"):
                self.agents.add(as_text(rec["toAgentId"]))
            if len(self.agents) > 1:
                self.multi_from = ev.seq
        if ev.type == "agent_surface":
            self.surfaces[ev.agent_id] = _surface(rec)
            self.spellings = {k: v for k, v in self.spellings.items() if k[0] != ev.agent_id}
        elif ev.type == "session_started" and isinstance(rec.get("capabilitySet"), dict):
            self.profiles = _profiles(rec["capabilitySet"])

    def after(self, ev):
        if ev.type == "api_call":
            self.open_calls.add(ev.agent_id)
        elif ev.type in BRACKET_TYPES:
            self.open_calls.discard(ev.agent_id)
        self.seq = ev.seq

    def spell(self, agent_id, operation):
        key = (agent_id, operation)
        if key not in self.spellings:
            apis, language = self.surfaces.get(agent_id, ([], ""))
            self.spellings[key] = spelling_for(apis, language, operation)
        return self.spellings[key]

    def profile(self, slug):
        """A profile's display name, or the slug as written (any JSON value, shown compact)."""
        return self.profiles.get(slug, slug) if isinstance(slug, str) else compact(slug)

    def href(self, seq, agent_id):
        """The agent chip's link, on rows of a run that has more than one agent by then (None
        before; "" for an agent id no URL can carry, such as one with a line break)."""
        if self.multi_from is None or seq < self.multi_from:
            return None
        if agent_id not in self.hrefs:
            try:
                self.hrefs[agent_id] = reverse("runs:agent", args=(self.run_pk, agent_id))
            except NoReverseMatch:
                self.hrefs[agent_id] = ""
        return self.hrefs[agent_id]


class FeedRenderer:
    """Renders stored events into rows, carrying a `FeedState` from one batch to the next."""

    def __init__(self, run_pk, state=None):
        self.run_pk = run_pk
        self.state = state

    @property
    def open_calls(self):
        return self.state.open_calls

    def spell(self, agent_id, operation):
        return self.state.spell(agent_id, operation)

    def profile(self, slug):
        return self.state.profile(slug)

    def row(self, ev, kind, label, detail, tone, **extra):
        agent = ev.agent_id or "root"
        return Row(seq=ev.seq, agent=agent, kind=kind, label=label, detail=detail, tone=tone,
                   timestamp=ev.timestamp, href=self.state.href(ev.seq, agent), **extra)

    def result_row(self, ev, kind, detail, rec):
        ok = rec.get("ok", ev.ok)
        if ok is False:
            failure = ev.failure  # the class, as the write path read it (kebab-case, §6)
            return self.row(ev, kind, "result ✗", detail, "fail", failure=failure)
        return self.row(ev, kind, "result", detail, "ok")

    def rows(self, events):
        out = []
        for ev in events:
            rec = record_of(ev.raw)
            self.state.before(ev, rec)
            if ev.type not in PANEL_KINDS and (ev.type in RENDERERS or not ev.type.startswith("host:")):
                row = RENDERERS.get(ev.type, _unknown)(self, ev, rec)
                if row is not None:
                    out.append(row)
            self.state.after(ev)
        return out

    def next_batch(self, after, limit=BATCH):
        """Rows for the next `limit` stored events after seq `after`, and the seq read up to
        (== `after` when nothing new is stored)."""
        events = [Ev._make(e) for e in Event.objects.filter(run_id=self.run_pk, seq__gt=after)
                  .order_by("seq").values_list(*Ev._fields)[:limit]]
        if not events:
            return [], after
        if self.state is None or self.state.seq != after:
            self.state = FeedState.at(self.run_pk, after)
        return self.rows(events), events[-1].seq

    def render(self, rows, cursor):
        return render_rows(rows, cursor)


def _row_html(row):
    # Every field is escaped (event payloads are untrusted); markup as runs/feed.html expects.
    agent = escape(row.agent)
    if row.href:
        chip = f'\n  <a class="feed-agent tag" href="{escape(row.href)}">{agent}</a>'
    else:
        chip = "" if row.href is None else f'\n  <span class="feed-agent tag">{agent}</span>'
    failure = f'\n  <span class="feed-failure">{escape(row.failure)}</span>' if row.failure else ""
    if row.output:
        more = (f'\n  <details class="feed-output"><summary class="muted">{escape(row.args)}</summary>'
                f'<pre>{escape(row.output)}</pre></details>')
    elif row.args:
        more = f'\n  <div class="feed-args muted mono">{escape(row.args)}</div>'
    else:
        more = ""
    return (
        f'<div class="feed-row tone-{escape(row.tone)}" data-seq="{row.seq}" data-agent="{agent}" data-kind="{escape(row.kind)}">\n'
        f'  <time class="feed-time" title="{escape(row.timestamp)}">{escape(row.time)}</time>\n'
        f'  <span class="feed-label">{escape(row.label.upper())}</span>{chip}\n'
        f'  <span class="feed-detail{" mono" if row.kind == "call" else ""}">{escape(row.detail)}</span>{failure}{more}\n'
        "</div>"
    )


def render_rows(rows, cursor):
    """One socket message: the rows appended to #feed-rows (out of band), then the cursor (the
    last seq read). Built here rather than in a template: it is the feed's hot path, and each
    window is rendered once for every connection."""
    appended = f'<div hx-swap-oob="beforeend:#feed-rows">{"".join(map(_row_html, rows))}</div>\n' if rows else ""
    return f'{appended}<span id="feed-cursor" hx-swap-oob="true" data-seq="{int(cursor)}"></span>'


def run_state(run_pk):
    """(exists, still live?) — the feed closes once an ended run's last event is sent."""
    status = Run.objects.filter(pk=run_pk).values_list("status", flat=True).first()
    if status is None:
        return False, False
    return True, status in (Run.Status.QUEUED, Run.Status.RUNNING)


@dataclass
class Window:
    """One socket message's worth: the rows after seq `after`, rendered."""

    html: str
    cursor: int  # the last seq read (== after when nothing new was stored)
    full: bool  # `limit` events were read: there may be more right after
    live: bool  # the run's status, read before the events


def read_window(run_pk, after, limit=BATCH, state=None):
    """(Window, the state after it) — the run's status first, so an ended run's last window
    holds every event stored before it ended."""
    _, live = run_state(run_pk)
    renderer = FeedRenderer(run_pk, state)
    rows, cursor = renderer.next_batch(after, limit)
    if cursor == after:
        return Window("", after, False, live), state
    # Seqs are contiguous: `limit` events span `limit` seqs (a gap could only make it look full,
    # which costs one more read, never a missed event).
    return Window(renderer.render(rows, cursor), cursor, cursor - after >= limit, live), renderer.state
