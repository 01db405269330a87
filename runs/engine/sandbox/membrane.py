"""The membrane: every call a program makes crosses here, and only here.

For each call: `api_call` is emitted → `Grants.permits` is asked (the role before the shape for
endings) → the typed tool implementation runs (runs/engine/tools) → `api_result` (ok, failure
class). Endings, successions, forks, hand-overs, compaction and delegation that needs the run
loop are registered here and applied by the loop when the turn closes.

The engine calls one function, `runs.engine.sandbox.program.run_program(ctx, source)`, with an
`AgentContext` (what this agent holds) and gets a `ProgramOutcome` (what happened, what to apply at
turn close, and `model_messages`: exactly what the model is told). The `code_execution` record and
the operator's log lines have already been emitted through ctx.emit.
"""

import re
import time
from dataclasses import dataclass, field
from typing import Callable

from surfaces.arms import spell
from surfaces.catalogue import BY_ID, ENDINGS
from surfaces.grants import Grants
from runs.engine.sandbox import model_text as messages
from runs.engine.sandbox.handlers import BLOCKING, HANDLERS, host_clock
from runs.engine.store_records import StoreRecords
from runs.engine.sandbox.typescript import lib_entries as typescript_lib_entries, lib_key
from runs.engine.tools import docs
from runs.engine.tools.errors import MAX_HANDED_ON_BYTES, ToolError
from runs.engine.agents import SessionOver
from runs.engine.tools.workspace import Workspace
from runs.engine.tools.context_views import SEARCH_RESULTS, OpenViews, docs_view

# Caps on the operator's record (seeds/004 "Caps on the operator's record").
MAX_CALLS_DESCRIBED = 500
MAX_REFUSALS_DESCRIBED = MAX_VIEW_RECORDS_PER_KIND = 100
MAX_FAILURE_TEXT_BYTES = 512
MAX_LOG_LINES, MAX_LOG_BYTES, MAX_LOG_LINE_BYTES = 200, 16 * 1024, 2 * 1024
SUMMARY_PREVIEW_BYTES = 160
DEFAULT_TIMEOUT_SECS = 30
DEFAULT_MAX_MEMORY_BYTES = 256 * 1024 * 1024


def python_key(name):
    key = re.sub(r"\W+", "_", name).strip("_").lower() or "module"
    return f"_{key}" if key[0].isdigit() else key


LIB_KEYS = {"python": python_key, "typescript": lib_key}  # a name in each arm's convention


class Library:
    """lib: the code this agent loaded (code skills, code memories), keyed in its arm's convention.

    Persists across the agent's turns; a fork or successor starts with an empty one."""

    def __init__(self):
        self.modules = {}  # key -> {"name": original name, "source": str}

    def load(self, name, source, language="python"):
        """Load (or reload) code under its key; a second thing spelling alike gets a numeric suffix."""
        for key, module in self.modules.items():
            if module["name"] == name:
                module["source"] = source
                return key
        base = key = LIB_KEYS[language](name)
        n = 2
        while key in self.modules:
            key, n = f"{base}{n}", n + 1
        self.modules[key] = {"name": name, "source": source}
        return key

    def guest_modules(self):
        return [(key, m["source"]) for key, m in self.modules.items()]


@dataclass
class AgentContext:
    """What one agent instance holds when its program runs. The engine builds it once per
    incarnation and passes the same object every turn (window, lib and stores persist)."""

    agent_id: str
    grants: Grants
    workspace: Workspace
    emit: Callable[[dict], None] = lambda record: None  # one gg record; the engine stamps the envelope
    language: str = "python"
    doc_view_types: str = "return+errors"
    stores: dict = field(default_factory=dict)  # kind ("memories", "tasks", "board", "skills", "archive") -> store
    timeout_secs: float = DEFAULT_TIMEOUT_SECS
    max_memory_bytes: int = DEFAULT_MAX_MEMORY_BYTES
    shell_bounds: dict = field(default_factory=dict)  # the shell capability's maxChars / maxLines, as keywords
    on_use_script: bool = False  # an on-use script may end on nothing
    on_use_queue: list = field(default_factory=list)  # (kind, name, source) of on-use scripts reads queued
    mint_agent_id: Callable[[], str] | None = None  # fork's and spawn's immediate ids
    window: OpenViews = field(default_factory=OpenViews)
    lib: Library = field(default_factory=Library)
    programs: list | None = None  # the program library ({id, turn, source, ok, error}); None when not kept
    delegation: object = None  # optional engine hook: spawn(request)->handle, wait(ids)->results, send(id, message)
    thread: object = None  # optional engine hook on the history: archive(ranges)->reclaim report, position(views)
    turn: int = 0

    @property
    def role(self):
        return "none" if self.on_use_script else self.grants.role


@dataclass
class ProgramOutcome:
    ok: bool
    error: str | None = None  # the error text the model reads (None when ok)
    error_type: str | None = None  # GgTurnErrorType leaf: program_api_error, sandbox_timeout, ...
    ending: tuple | None = None  # (operation, payload) of the declaration that stands
    succession: tuple | None = None  # ("delegation.exec", {agent, prompt}) or ("delegation.transition_state", {...})
    forks: list = field(default_factory=list)  # [{"id", "prompt"}]: dispatched at turn close
    delegations: list = field(default_factory=list)  # [(operation, args)] for the loop: spawn / wait / send
    compaction: dict | None = None  # the last context.compact of the program
    rerun: str | None = None  # a programs.rerun hand-over (already withheld when it must not run)
    model_messages: list = field(default_factory=list)  # [(heading, body)]: notices first, the error last
    views: list = field(default_factory=list)  # views opened or replaced, in order (already in ctx.window)
    api_calls: int = 0
    tool_calls: int = 0
    duration_ms: int = 0
    code_execution: dict | None = None
    retry: bool = False  # the toolchain failed before reading the program: the model writes it again

    @property
    def model_message(self):
        """Everything the model is told besides its views, as one text (empty when nothing)."""
        return "\n\n".join(messages.render(h, b) for h, b in self.model_messages)


def clip(text, limit):
    raw = text.encode()
    return text if len(raw) <= limit else raw[:limit].decode(errors="ignore") + "…"


class Membrane:
    """One program run's host side: the calls, what they registered, and the operator's record."""

    def __init__(self, ctx, outcome):
        self.ctx, self.outcome = ctx, outcome
        self.deadline = time.monotonic() + ctx.timeout_secs
        self.budget = f"the program's wall-clock budget of {ctx.timeout_secs:g} s"
        self.blocked_seconds = 0.0  # time spent blocked in a wait: the program's budget does not run
        self.described = self.calls_suppressed = 0
        self.refusals = self.refusals_suppressed = 0
        self.view_records = {"opened": 0, "closed": 0, "refused": 0}
        self.view_records_suppressed = 0
        self.store_records = StoreRecords(self.emit)
        self.endings = []
        self.logs, self.log_count = [], 0
        self.module_errors = []
        self.undocumented = {}  # op_id -> calls made with no documentation view of it from an earlier turn

    # -- the stream ---------------------------------------------------------------------------
    def emit(self, record):
        self.ctx.emit(record)

    def log(self, level, message):
        self.emit({"type": "log", "level": level, "message": message})

    def spelled(self, op_id):
        return spell(self.ctx.language, op_id)

    def view_record(self, kind, level, message):
        if self.view_records[kind] < MAX_VIEW_RECORDS_PER_KIND:
            self.view_records[kind] += 1
            self.log(level, message)
        else:
            self.view_records_suppressed += 1

    # -- the guest's private channel ------------------------------------------------------------
    def feedback(self, fn, *args):
        if fn == "malformed_call":
            op_id, complaint = args
            return self.call(op_id, None, complaint)[1]
        if fn == "log":
            self.log_count += 1
            line = args[0]
            if len(line.encode()) > MAX_LOG_LINE_BYTES:
                line = clip(line, MAX_LOG_LINE_BYTES)
            self.logs.append(line)
            if len(self.logs) > MAX_LOG_LINES:
                del self.logs[0]
        elif fn == "report_module_error":
            name, message = args
            if (name, message) not in self.module_errors:
                self.module_errors.append((name, message))

    def kept_logs(self):
        kept, total = [], 0
        for line in reversed(self.logs):
            total += len(line.encode()) + 1
            if total > MAX_LOG_BYTES:
                break
            kept.append(line)
        kept.reverse()
        return kept

    # -- a call ---------------------------------------------------------------------------------
    def call(self, op_id, args, complaint=None):
        """One model-facing call: returns ("ok", value) or ("err", api-error) for the guest.

        `complaint` is set for a call whose arguments the SDK could not lower: it is recorded like
        any other and, unless refused first, fails as invalid-argument with the SDK's complaint."""
        started = time.monotonic()
        self.outcome.api_calls += 1
        describe = self.described < MAX_CALLS_DESCRIBED
        if describe:
            self.described += 1
            self.emit({"type": "api_call", "operation": op_id})
        else:
            self.calls_suppressed += 1
        if not self.ctx.on_use_script and not self.documented(op_id):
            self.undocumented[op_id] = self.undocumented.get(op_id, 0) + 1
        try:
            refusal = self.refusal(op_id)
            if refusal is not None:
                self.note_refusal(op_id, refusal)
                raise ToolError("unavailable", refusal)
            if complaint is not None:
                raise ToolError("invalid-argument", complaint)
            if time.monotonic() > self.deadline:
                raise ToolError("limit-exceeded", f"{self.budget} is spent")
            handler = HANDLERS[op_id]
            if BY_ID[op_id].tool is not None:
                self.outcome.tool_calls += 1
            with host_clock(self, op_id):
                result = ("ok", handler(self, **args))
        except ToolError as exc:
            result = ("err", {"code": exc.code, "operation": BY_ID[op_id].key, "message": exc.message})
            if op_id.startswith("views.") and exc.code in ("limit-exceeded", "invalid-argument"):
                self.view_record("refused", "warn", f"a view call was refused: {clip(exc.message, MAX_FAILURE_TEXT_BYTES)}")
        except SessionOver:  # a run-wide stop met inside the call (a hook failed): the turn closes, then the run ends
            result = ("err", {"code": "refused", "operation": BY_ID[op_id].key, "message": "the run is stopping"})
        except Exception as exc:  # a defect in a tool must not take the program down with a trap
            reason = (exc.strerror or "an I/O error") if isinstance(exc, OSError) else exc  # never its host path
            result = ("err", {"code": "other", "operation": BY_ID[op_id].key, "message": f"gg failed: {reason}"})
            self.log("error", f"`{op_id}` raised inside gg: {clip(repr(exc), MAX_FAILURE_TEXT_BYTES)}")
        if op_id in BLOCKING:
            blocked = time.monotonic() - started
            self.deadline += blocked
            self.blocked_seconds += blocked
        if describe:
            record = {"type": "api_result", "operation": op_id, "ok": result[0] == "ok"}
            if result[0] == "err":
                record["failure"] = result[1]["code"]
            self.emit(record)
        return result

    def documented(self, op_id):
        """Whether a documentation view of the operation stands in the window from an earlier turn
        (stream spec §4.18 `undocumentedCalls`: a view arrives in the window on the turn after the
        program that opened it)."""
        key = self.spelled(op_id)
        return any(v.kind == "docs" and v.selector == key and v.turn < self.ctx.turn for v in self.ctx.window.views)

    def refusal(self, op_id):
        """The refusal message, or None. Role before anything else for endings; never what would unlock it.
        gg's own words (seed 004: the error and nothing else): "`X` is not available." and, for an
        ending, which ending to use instead."""
        op = BY_ID[op_id]
        if op.binding.kind == "ending":
            if op.binding.role == self.ctx.role:
                return None
            message = f"`{self.spelled(op_id)}` is not available."
            instead = [f"`{self.spelled(e)}`" for e in ENDINGS[self.ctx.role].operations]
            if instead:
                message += f" Use {' or '.join(instead)} instead."
            return message
        return self.ctx.grants.refusal(op_id, self.ctx.language)

    def note_refusal(self, op_id, message):
        if self.refusals < MAX_REFUSALS_DESCRIBED:
            self.refusals += 1
            self.log("warn", f"the program's `{self.spelled(op_id)}` call was refused before it ran: "
                             f"{clip(message, MAX_FAILURE_TEXT_BYTES)}")
        else:
            self.refusals_suppressed += 1

    # -- helpers the handlers share ---------------------------------------------------------------
    def store(self, kind):
        store = self.ctx.stores.get(kind)
        if store is None:
            raise ToolError("unavailable", f"this agent holds no {kind} store")
        return store

    def snapshot(self, kind):
        self.store_records.add(self.store(kind).snapshot(), kind)

    def place(self, view):
        view.turn = self.ctx.turn
        action = self.ctx.window.open(view)
        self.outcome.views.append(view)
        word = {"file": "file", "text": "text", "docs": "documentation"}[view.kind]
        self.view_record("opened", "debug", f"the program {action} the {word} view `{view.selector}` (~{view.tokens} tokens)")

    def closed(self, selector, views, action=None, detail=None):
        """Record closed views; a close that gave tokens back is a `context_managed` (nothing for none)."""
        if not views:
            return 0
        self.view_record("closed", "debug", f"the program closed the view `{selector}`")
        kinds = {v.kind for v in views}
        if action is None:
            action = {"docs": "close_docs_views", "file": "evict_file_views"}.get(kinds.pop() if len(kinds) == 1 else "",
                                                                             "close_text_views")
            if action == "close_text_views" and selector == SEARCH_RESULTS:
                action = "close_search_views"
        words = {"close_docs_views": "documentation", "evict_file_views": "file", "close_text_views": "text",
                 "close_search_views": "search-results"}
        record = {"type": "context_managed", "action": action, "reclaimedTokens": sum(v.tokens for v in views),
                  "items": len(views), "detail": detail or f"{len(views)} {words[action]} view(s)"}
        if action != "close_search_views" and self.ctx.thread is not None:
            record["earliestRemoved"] = self.ctx.thread.position(views)
        self.emit(record)
        return len(views)

    def remaining(self):
        return max(0.0, self.deadline - time.monotonic())

    def declare_ending(self, op_id, payload):
        self.endings.append((op_id, payload))

    def declare_succession(self, op_id, payload):
        if self.outcome.succession is not None:
            first = self.spelled(self.outcome.succession[0])
            raise ToolError("refused", f"this turn already declared a succession with `{first}`; the first one stands")
        self.outcome.succession = (op_id, payload)

    def mint(self):
        if self.ctx.mint_agent_id is None:
            raise ToolError("unavailable", "this run cannot start another agent")
        return self.ctx.mint_agent_id()

    def lib_docs(self, key, name, source):
        if self.ctx.language == "typescript":
            return typescript_lib_entries(key, name, source, self.ctx.lib.modules)
        return docs.lib_entries(key, name, source)

    def lib_entries(self):
        """The documentation entries of the code this agent loaded."""
        return [entry for key, module in self.ctx.lib.modules.items()
                for entry in self.lib_docs(key, module["name"], module["source"])]

    def queue_on_use(self, kind, name, source):
        """A read of a skill or memory with an on-use script queues it (run after the program; not for an
        on-use script's own reads)."""
        if source and source.strip() and not self.ctx.on_use_script:
            self.ctx.on_use_queue.append((kind, name, source))

    def load_code(self, name, source):
        """Load a code skill or code memory into lib and open a documentation view per function it
        declares (seeds/003 "lib"); code that does not parse opens none (its load fails in the guest)."""
        if not (source and source.strip()):
            return
        key = self.ctx.lib.load(name, source, self.ctx.language)
        for entry in self.lib_docs(key, name, source):
            if self.ctx.window.find("docs", entry.key) is None:
                self.place(docs_view(entry.key, entry.body))

    # -- the end of the program -------------------------------------------------------------------
    def finish(self, ok, error_text, error_type):
        outcome, ctx = self.outcome, self.ctx
        error_text = None if error_text is None else clip(error_text, MAX_HANDED_ON_BYTES)  # raise E("x" * 10**7)
        outcome.ok, outcome.error, outcome.error_type = ok, error_text, error_type
        if self.endings:
            op_id, payload = self.endings[-1]
            summary = payload.get("summary") or ("approved" if op_id == "session.approve" else
                                                 "; ".join(payload.get("items", [])))
            if not ok:
                self.log("warn", f"the program called `{self.spelled(op_id)}` and then failed, so the session was NOT "
                                 f"ended: {clip(summary, SUMMARY_PREVIEW_BYTES)}")
            else:
                outcome.ending = (op_id, payload)
                if len(self.endings) > 1:
                    self.log("warn", f"the program called `{self.spelled(op_id)}` {len(self.endings) - 1} more time(s) "
                                     f"before the call that ended the session; the last declaration is the one that stands.")
                self.log("info", f"the program ended the session: {clip(summary, SUMMARY_PREVIEW_BYTES)}")
        notices = [messages.module_failed(name, ctx.lib.modules.get(name, {}).get("name", name), message)
                   for name, message in self.module_errors]
        if outcome.rerun is not None:
            reason = "failed" if not ok else "ended" if outcome.ending else None
            if reason:
                outcome.rerun = None
                notices.append(messages.rerun_not_run(reason))
                self.log("warn", messages.RERUN_LOG[reason])
        if self.refusals_suppressed:
            self.log("warn", f"{self.refusals_suppressed} further refused call(s) were not recorded")
        if self.view_records_suppressed:
            self.log("warn", f"{self.view_records_suppressed} further view record(s) were not recorded")
        self.store_records.finish(self.log, self.store)
        outcome.model_messages = [("Notice", n) for n in notices]
        if error_text is not None:
            heading = "Compiler error" if error_type == "transpile_syntax" else "Runtime error"
            outcome.model_messages.append((heading, error_text))
        elif ok and not outcome.views and not notices and outcome.ending is None:
            outcome.model_messages.append(("Notice", messages.nothing_in_context(ctx.language)))
        record = {"type": "code_execution", "ok": ok, "toolCalls": outcome.tool_calls,
                  "durationMs": outcome.duration_ms, "logs": self.kept_logs()}
        if outcome.api_calls:
            record["apiCalls"] = outcome.api_calls
        if error_text is not None:
            record["error"] = error_text
        if outcome.ending and outcome.ending[0] == "session.finish":
            record["finished"] = outcome.ending[1]["summary"]
        if self.log_count > len(record["logs"]):
            record["logsSuppressed"] = self.log_count - len(record["logs"])
        if self.undocumented:
            record["undocumentedCalls"] = {"calls": sum(self.undocumented.values()), "operations": self.undocumented}
        for name, count in (("callsSuppressed", self.calls_suppressed), ("refusalsSuppressed", self.refusals_suppressed),
                            ("viewRecordsSuppressed", self.view_records_suppressed),
                            ("storeRecordsSuppressed", self.store_records.suppressed)):
            if count:
                record[name] = count
        self.emit(record)
        outcome.code_execution = record


__all__ = ["AgentContext", "ProgramOutcome", "Library", "Membrane"]
