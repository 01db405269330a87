"""The live activity feed: stored events turned into the rows gg's console shows.

Rows follow spec/stream.md §7.2 and spec/console.md §1.4: one function per event family, each
returning a `Row` (or None: that event drives panels, not the feed). Calls are spelled the way
the agent wrote them (§7.3) through `surfaces.arms.spelling_for`, from the surface that agent had
reported by then (`runs.feed.state.FeedState`).

A row depends only on its event and on that state: a fold of the log up to the event before it.
So a window of rows is the same whoever reads it, from whichever cursor, whenever — which is what
lets the feed read and render each window once per process (`runs.feed.consumer.WindowCache`).

Everything here is plain data until `runs.feed.html.render_rows`, which escapes every field.
"""

import json
from dataclasses import dataclass

from runs.stream.usage import format_tokens
from runs.stream.record import as_text, clock, log_level

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
    "program": "failed programs",
    "output": "program output",
    "system": "host setup",
    "other": "other",
    "raw": "every record (raw)",
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
    turn: int | None = None
    offset: float | None = None  # seconds from the run's first stamp
    event_href: str = ""  # the record's own page: the row opens it
    turn_href: str = ""  # its turn's page ("" without a turn, or for an id no URL can carry)

    @property
    def time(self):
        return clock(self.timestamp)


def compact(value, limit=ARGS_LIMIT):
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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
    if not ev.turn:
        return ctx.row(ev, "turn", "turn", "Turn started.", "system")
    return ctx.row(ev, "turn", f"turn {ev.turn}", f"Turn {ev.turn} started.", "system")


def _message(ctx, ev, rec):
    text = rec.get("text")
    if not isinstance(text, str) or not text.strip():
        return None
    return ctx.row(ev, "message", "agent", text, "agent")


def _tool(ctx, ev, rec):
    if ev.agent_id in ctx.open_calls:
        return None  # legacy: a program call bridged inside its api_call bracket (§10), absorbed by its rows
    name = str(rec.get("name") or ev.tool_name or "?")
    if ev.type == "tool_call":
        args = rec.get("args")
        return ctx.row(ev, "tool", "tool", name, "tool", args=compact(args) if args else "")  # `{}`: no arguments line
    summary = rec.get("summary")
    return ctx.result_row(ev, "tool", f"{name}: {summary}" if summary else name, rec)


def _api(ctx, ev, rec):
    operation = rec.get("operation")  # not ev.operation: a legacy pair never joins a surface
    if isinstance(operation, str) and operation:
        spelled = ctx.spell(ev.agent_id, operation)
    else:
        spelled = _legacy_spelling(rec)
    if ev.type == "api_call":
        args = ctx.bridged.get(ev.seq)  # a bridged tool call's arguments (console.md §1.4, step 3)
        return ctx.row(ev, "call", "call", spelled, "tool", args=compact(args) if args else "")
    summary = rec.get("summary") or ctx.absorbed(ev.agent_id)
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
    level = log_level(rec)
    tone = {"error": "fail", "warn": "warn", "warning": "warn"}.get(level, "system")
    return ctx.row(ev, "log", level, str(rec.get("message", "")), tone)


def _compaction(ctx, ev, rec):
    detail = f"Context compacted: {format_tokens(rec.get('beforeTokens'), '?')} → {format_tokens(rec.get('afterTokens'), '?')} tokens."
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
    reclaimed = rec.get("reclaimedTokens")
    args = plural(rec.get("items", 0), "item", "items")
    if reclaimed != 0:  # gg omits "reclaimed 0 tokens"
        args = f"reclaimed {format_tokens(reclaimed, '?')} tokens · {args}"
    return ctx.row(ev, "context", CONTEXT_LABELS.get(action, action), str(rec.get("detail") or action), "compact", args=args)


DISPOSITION_WORDS = (("carried", "carried"), ("copied", "copied"), ("linked", "linked"), ("dropped", "dropped"), ("initialized", "fresh"))


def _transition(ctx, ev, rec):
    kind = rec.get("kind")
    to = as_text(rec.get("toAgentId")) or "?"  # an id or a state of another shape: its JSON, never a repr
    slug = rec.get("profileId") or rec.get("agent")  # `agent`: the mid-era shape
    profile = ctx.profile(slug) if slug else ""
    state = as_text(rec.get("state"))
    if kind == "fork":
        label, detail = "fork", f"Forked a copy of this agent as {to}."
    elif kind == "fsm":
        label, detail = "handoff", f"Transitioned to `{state}`{f' ({profile})' if profile else ''} as {to}."
    elif not profile:  # no profile named: the successor, not a `?` (issue 20)
        label, detail = "handoff", f"Continued in `{state}` as {to}." if state else f"Continued as {to}."
    elif state:
        label, detail = "handoff", f"Continued as `{profile}` in `{state}` ({to})."
    else:
        label, detail = "handoff", f"Continued as `{profile}` ({to})."
    modules = [m for m in listed(rec.get("modules")) if isinstance(m, dict)]
    fates = []
    for disposition, word in DISPOSITION_WORDS:
        kinds = [as_text(m.get("kind")) for m in modules if m.get("disposition") == disposition]
        if kinds:
            fates.append(f"{word} {', '.join(kinds)}")
    return ctx.row(ev, "handoff", label, detail, "handoff", args=" · ".join(fates))


def _fsm_state(ctx, ev, rec):
    state = as_text(rec.get("state")) or "?"  # values of another shape as their JSON, never a repr
    detail = f"Entered `{state}`"
    if rec.get("from"):
        detail += f" from `{as_text(rec['from'])}`"
    profile = rec.get("profileId") or rec.get("agent")  # `agent`: the mid-era shape
    detail += f", running {ctx.profile(profile)}." if profile else "."
    machine = as_text(rec.get("fsmId") or rec.get("fsm") or rec.get("machine"))
    return ctx.row(ev, "handoff", "state", detail, "handoff", args=f"machine {machine}" if machine else "")


def _code_execution(ctx, ev, rec):
    logs = [str(line) for line in listed(rec.get("logs"))]
    failed = rec.get("ok") is False
    args = plural(len(logs), "line", "lines") if logs else ""
    dropped = rec.get("logsSuppressed")
    if dropped:
        args += f" · {plural(dropped, 'earlier line', 'earlier lines')} dropped by the capture cap"
    healed = healing_detail(rec)
    if healed:  # an older stream's healing record: what gg did to the reply, and the reply as sent
        reply = ctx.reply(ev)
        label = "not a program" if healed.startswith("not a program") else "healed"
        output = reply if reply else "(no assistant message in this turn)"
        if logs:
            output += "\n\n— printed —\n" + "\n".join(logs)
        summary = "the reply as sent" + (f" · {args} printed" if args else "")
        return ctx.row(ev, "program", label, healed, "fail" if failed else "warn", args=summary, output=output)
    if not logs and not failed:
        return None
    if failed:
        # Like a failed call: the error's own line (a trace's last: `KeyError: 'b'`), output beneath.
        error = rec.get("error") if isinstance(rec.get("error"), str) else ""
        headline = error_headline(error) or "The program was not run."
        return ctx.row(ev, "program", "program ✗", headline, "fail", args=args, output="\n".join(logs))
    return ctx.row(ev, "output", "output", "Program output", "system", args=args, output="\n".join(logs))


# Why a reply was not a program at all (GgNotAProgram), in gg's console's words.
NOT_A_PROGRAM = {"empty": "empty reply", "tool_calls_only": "tool calls only", "prose": "prose",
                 "comment_only": "comments only", "no_program_block": "no program block",
                 "several_blocks": "several programs"}


def healing_detail(rec) -> str:
    """An older stream's `code_execution.healing` (GgResponseHealing: strategies[], notAProgram?,
    blocks?, candidateShape?, didNotConverge) as gg's console words the turn: "program ran · 2 tool
    calls · healed: strip-fences" or "not a program: several programs (2, fenced)", then "healing did
    not converge", "finished", the error. "" for a clean reply (gg omits the record then)."""
    healing = rec.get("healing")
    if not isinstance(healing, dict):
        return ""
    strategies = [str(s) for s in listed(healing.get("strategies")) if s]
    not_a_program = healing.get("notAProgram")
    unconverged = healing.get("didNotConverge") is True
    if not (strategies or not_a_program or unconverged):
        return ""
    parts = []
    if not_a_program:
        reason = NOT_A_PROGRAM.get(not_a_program, str(not_a_program)) if isinstance(not_a_program, str) else ""
        blocks, shape = healing.get("blocks"), healing.get("candidateShape")
        counted = isinstance(blocks, int) and not isinstance(blocks, bool)
        shape = f", {shape}" if counted and isinstance(shape, str) and shape else ""
        parts.append(f"not a program{f': {reason}' if reason else ''}{f' ({blocks}{shape})' if counted else ''}")
    else:
        parts.append("program failed" if rec.get("ok") is False else "program ran")
        calls = rec.get("toolCalls")
        if isinstance(calls, int) and not isinstance(calls, bool) and calls > 0:
            parts.append(plural(calls, "tool call", "tool calls"))
        if strategies:
            parts.append(f"healed: {', '.join(strategies)}")
    if unconverged:
        parts.append("healing did not converge")
    if rec.get("finished") is not None:
        parts.append("finished")
    error = rec.get("error")
    if rec.get("ok") is False and isinstance(error, str) and error_headline(error):
        parts.append(error_headline(error))
    return " · ".join(parts)


def error_headline(error: str) -> str:
    """An error's own line: the last unindented line of a trace (`KeyError: 'b'`), else its first."""
    lines = [line for line in error.splitlines() if line.strip()]
    headlines = [line for line in lines if not line[0].isspace()]
    return (headlines[-1] if headlines else lines[0].strip()) if lines else ""


ENVELOPE = ("timestamp", "sessionId", "agentId", "parentAgentId", "issueId", "type")


def raw_row(ctx, ev, rec):
    """A record with no row of its own (it drives panels): listed under the raw kind only, its
    fields beyond the envelope (the row already shows time, agent and type)."""
    fields = {k: v for k, v in rec.items() if k not in ENVELOPE} if isinstance(rec, dict) else rec
    return ctx.row(ev, "raw", ev.type, compact(fields) if fields else "", "raw")


def _host_system(ctx, ev, rec):
    # The orchestrator's setup/teardown rows (stream.md §1.1); other host kinds are gg's twins.
    parts = [str(rec.get(k)) for k in ("stage", "status") if rec.get(k)]
    detail = " ".join(parts) + (f": {rec['message']}" if rec.get("message") else "")
    tone = "fail" if rec.get("status") == "failed" else "system"
    return ctx.row(ev, "system", "system", detail or "system", tone)


def unknown_row(ctx, ev, rec):
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


def has_row(etype: str) -> bool:
    """Whether a record of type `etype` has a feed row of its own (not a panel kind, not a host twin)."""
    return etype not in PANEL_KINDS and (etype in RENDERERS or not etype.startswith("host:"))
