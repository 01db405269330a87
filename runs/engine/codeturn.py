"""A responses-as-code turn: the reply's submit_program calls run through the membrane.

Each call carrying a program gets the `ok` receipt and is run by `sandbox.program.run_program`, which
emits the api_call/api_result brackets and the code_execution record. What the model reads next
turn is the views the program left in its window (file / text / documentation bands, replaced in
place, dropped when closed) and the membrane's messages under their three headings. A reply
without a program is the error turn `missing_completion_no_program`; reply text is never run.
Spawning, waiting (the children, or a board issue's implementers and reviewers, run to their end
inside the call) and messaging happen inside the call's bracket through the engine's hook; so does
archive_thread, over the agent's history.
"""

from runs.engine import issues, thread
from runs.engine.agents import SessionOver, message
from runs.engine.sandbox import model_text as messages
from runs.engine.sandbox.membrane import AgentContext
from runs.engine.sandbox.program import run_program
from runs.engine.tools.context_views import SEARCH_RESULTS
from runs.engine.tools.errors import ToolError
from runs.engine.tools.workspace import shell_bounds

VIEW_BANDS = {"file": "file_view", "text": "text_view", "docs": "docs_view"}
MESSAGE_BANDS = {"Compiler error": "compiler_error", "Runtime error": "runtime_error", "Notice": "system"}
# The turn error kind (runs.engine.loop.TURN_ERROR_KINDS) of a program outcome, by its errorType's prefix.
OUTCOME_ERROR_KINDS = {"transpile": "transpile", "program": "program_fault", "sandbox": "sandbox_limit"}
ENDING_SUMMARY = {"session.approve": lambda p: "approved",
                  "session.request_changes": lambda p: "changes requested:\n" + "\n".join(
                      f"- {item}" for item in p.get("items", []))}


class Delegation:
    """The membrane's hook into the loop: children start inside the api_call bracket."""

    def __init__(self, engine, agent):
        self.engine, self.agent = engine, agent

    def spawn(self, request):
        case, brief = request["task"]
        if case == "issue":
            # Board agents are top level and dispatched by the wait; a spawner's child cannot be one.
            raise ToolError("unavailable", "the built-in engine does not spawn a subagent on an issue: "
                                           "board.wait_for_issue dispatches it, or spawn with a prompt")
        child = self.engine.spawn(self.agent, request["agent"], brief)
        return {"id": child.id, "slot": 0, "model_id": child.profile.model_id}

    def wait(self, ids):
        return self.engine.wait(self.agent, ids)

    def wait_for_issue(self, issue_id):
        return issues.wait(self.engine, self.agent, issue_id)

    def send(self, agent_id, text):
        self.engine.send(self.agent, agent_id, text)


class Thread:
    """The membrane's hook onto the agent's history: archiving turns, and where a view sits in it."""

    def __init__(self, agent):
        self.agent = agent

    def archive(self, ranges):
        return thread.archive(self.agent, [(r["start"], r["end"]) for r in ranges])

    def position(self, views):
        """The zero-based position in the window of the earliest of `views` (None when none is there)."""
        keys = {(v.kind, v.selector) for v in views}
        return next((i for i, m in enumerate(self.agent.window) if m.get("view") in keys), None)


def context(engine, agent):
    """The agent's AgentContext, built once per incarnation (window, lib and stores persist)."""
    if getattr(agent, "ctx", None) is None:
        params = agent.params("responses-as-code")

        def emit(record):
            record = dict(record)
            agent.emit(record.pop("type"), **record)

        agent.ctx = AgentContext(
            agent_id=agent.id, grants=agent.grants(), workspace=agent.workspace, emit=emit,
            language=agent.profile.language, doc_view_types=agent.profile.doc_view_types,
            stores={kind: h.impl for kind, h in agent.holdings.items() if h.enabled and kind != "history"},
            timeout_secs=params.get("timeoutSecs", 30), max_memory_bytes=params.get("maxMemoryBytes", 268435456),
            shell_bounds=shell_bounds(agent.params("shell")),
            mint_agent_id=engine.mint_id, delegation=Delegation(engine, agent), thread=Thread(agent))
    return agent.ctx


def _sync_views(agent, window):
    """Make the history's view messages match the program's window: replaced in place, closed
    ones dropped, new ones appended in the order they were placed."""
    current = {(v.kind, v.selector): v for v in window.views}
    kept, seen = [], set()
    for msg in agent.window:
        key = msg.get("view")
        if key is None:
            kept.append(msg)
        elif key in current and key not in seen:
            seen.add(key)
            kept.append(_view_message(message, current[key]))
    kept += [_view_message(message, v) for key, v in current.items() if key not in seen]
    agent.window[:] = kept


def _view_message(message, view):
    band = "search_results" if (view.kind, view.selector) == ("text", SEARCH_RESULTS) else VIEW_BANDS[view.kind]
    msg = message("user", view.message(), band, label=view.selector)
    msg["view"] = (view.kind, view.selector)
    return msg


def run(engine, agent, reply):
    """Run the reply's programs; returns (error kind, error type) for an error turn, else None."""
    programs = [c for c in reply.tool_calls if c.name == "submit_program"]
    for call in reply.tool_calls:
        if call.name != "submit_program":
            agent.window.append(message("tool", "this mode offers one tool, submit_program; send your program "
                                        "with it", "tool_output", toolCallId=call.id))
    if not any(isinstance(c.args.get("program"), str) and c.args["program"].strip() for c in programs):
        for call in programs:
            agent.window.append(message("tool", "the call carried no program string", "tool_output",
                                        toolCallId=call.id))
        return ("missing_completion", "missing_completion_no_program")
    ctx = context(engine, agent)
    ctx.turn = agent.turns
    error = None
    for call in programs:
        source = call.args.get("program")
        if not isinstance(source, str) or not source.strip():
            agent.window.append(message("tool", "the call carried no program string", "tool_output",
                                        toolCallId=call.id))
            continue
        agent.window.append(message("tool", messages.receipt(), "tool_output", toolCallId=call.id))
        engine.telemetry.flush()  # stored before the program runs, for as long as it runs
        outcome = run_program(ctx, source)
        _run_on_use(engine, agent, ctx)
        engine.code_executions += 1
        engine.undocumented.update(outcome.code_execution.get("undocumentedCalls", {}).get("operations", {}))
        agent.tool_calls += outcome.tool_calls
        _sync_views(agent, ctx.window)
        for heading, body in outcome.model_messages:
            agent.window.append(message("user", messages.render(heading, body), MESSAGE_BANDS[heading]))
        if outcome.error_type and error is None:
            error = (OUTCOME_ERROR_KINDS[outcome.error_type.split("_", 1)[0]], outcome.error_type)
        elif not outcome.ok and outcome.error_type is None and not outcome.retry:
            agent.emit("log", level="error", message="the code sandbox could not be operated; the run stops")
            raise SessionOver("internal_error")
        _apply(engine, agent, outcome)
        if agent.ending:
            break
    return error


def _apply(engine, agent, outcome):
    """Register what the program declared for the loop to apply at turn close."""
    if outcome.ending:
        op_id, payload = outcome.ending
        agent.ending = (op_id.split(".", 1)[1], ENDING_SUMMARY.get(op_id, lambda p: p.get("summary", ""))(payload),
                        payload.get("items"))
    if outcome.succession and agent.succession is None:
        op_id, payload = outcome.succession
        try:
            if op_id == "delegation.exec":
                entry = agent.profile.roster_entry(payload.get("agent"))
                if entry is None or "subagent" not in entry.scopes:
                    raise ToolError("invalid-argument", f"{payload.get('agent')!r} is not in the roster")
                agent.succession = ("exec", entry.agent, payload.get("prompt"))
            else:
                edges = agent.machine.state(agent.state).transitions if agent.machine else ()
                edge = next((t for t in edges if t.to == payload.get("state")), None)
                if edge is None:
                    raise ToolError("invalid-argument", f"there is no edge to {payload.get('state')!r}")
                agent.succession = ("fsm", edge, payload.get("note"))
        except ToolError as exc:
            agent.emit("log", level="warn", message=f"the succession was not applied: {exc.message}")
    agent.forks += [(fork["id"], fork.get("prompt") or "") for fork in outcome.forks]
    if outcome.compaction:
        agent.compaction = outcome.compaction  # applied at the top of the next turn; the last one stands


def _run_on_use(engine, agent, ctx):
    """The on-use scripts the program's reads queued (seed 003), each in the agent's arm with no ending
    group: a failure is one Notice naming the skill or memory, the turn's own outcome untouched."""
    queue, ctx.on_use_queue = ctx.on_use_queue, []
    for kind, name, source in queue:
        ctx.on_use_script = True
        engine.telemetry.flush()
        try:
            outcome = run_program(ctx, source)
        finally:
            ctx.on_use_script = False
        engine.code_executions += 1
        if not outcome.ok:
            first = (outcome.error or outcome.error_type or "it failed").strip().splitlines()[-1]
            agent.window.append(message("user", messages.render("Notice", f"The on-use script of the {kind} "
                                                                f"`{name}` failed: {first}"), "system"))
