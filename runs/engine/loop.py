"""The run loop: incarnations, turns, ceilings and successions, reported as a gg stream.

`Engine(spec, telemetry, workspace_dir, should_cancel).run()` drives a validated `RunSpec` to its
end and returns gg's terminal status. Agents take turns in spawn order, at most `maxParallel` of
the runnable ones per round, so a scripted run is deterministic. `wait_for_subagents` blocks: the
waiting agent frees its slot (`agent_status blocked`), the awaited children take their turns inside
the call, in rounds of their own, and the call returns their summaries — so a delegation's whole
subtree lands inside the caller's tool_call/tool_result (or api_call/api_result) bracket. A wait
for a board issue blocks the same way while the issue's agents run (runs.engine.issues).

Per incarnation (spec/stream.md §3.1): agent_spawned → fsm_state (in a machine) → agent_modules →
agent_surface → the *_state snapshots of the kinds it holds → agent_status (non-root).
Per turn: turn_started → context_breakdown → context_message (new pool entries) → prompt → usage
→ assistant_message → tool_call/tool_result pairs, or the program's api_call/api_result and
code_execution → turn_outcome → turn_timing. Successions are applied once the turn has closed:
agent_transition on the outgoing stream, then the successor's opening under a fresh id.
Ceilings (maxCost against the summed usage cost included) and an operator cancel are checked at
turn boundaries, a child's inside a wait among them. A per-agent ceiling (maxTurns, the error
ceilings) met by a subagent or fork stops that agent alone (`agent_status failed`); its spawner gets
the status (`exhausted`, `limit_exceeded`) as the subagent's result. A run-wide stop (cancel,
maxRuntimeSecs, maxCost, the root's own ceiling) found inside a wait fails the wait, the waiting
agent's turn closes, and the run ends. session_summary and session_ended close every run.
"""

import hashlib
import json
import logging
import time
from collections import Counter, deque
from pathlib import Path

from runs.engine import issues, thread, toolcalls
from runs.engine.providers import SUBMIT_PROGRAM, ProviderError, Request, make_provider
from runs.engine.spec import MODULE_KINDS
from runs.engine.holdings import StoreRegistry, open_holdings, succeed
from runs.engine.tools import ToolError, Workspace, estimate_tokens
from surfaces.arms import surface_apis
from surfaces.grants import Grants

log = logging.getLogger(__name__)

BANDS = ("system", "user_prompt", "assistant", "tool_output", "compiler_error", "runtime_error", "file_view",
         "text_view", "docs_view", "search_results", "skill", "memory", "task_list", "history")
DEFAULT_WINDOW = 128_000
SNAPSHOT_KINDS = ("skills", "memories", "tasks", "board", "archive")  # the opening's snapshot order
DELEGATION = ("spawn_subagent", "wait_for_subagents", "send_message", "exec", "fork", "transition_state")
ENDING_TOOLS = ("finish", "approve", "request_changes")
ERROR_KINDS = ("model_api", "transpile", "program_fault", "sandbox_limit", "missing_completion")


class SessionOver(Exception):
    """A stop. `agent` is set for a per-agent ceiling (maxTurns, the error ceilings): it stops that
    agent alone, which a subagent or fork returns to its spawner; anything else ends the run."""

    def __init__(self, status, breach=None, agent=None):
        super().__init__(status)
        self.status, self.breach, self.agent = status, breach, agent


def message(role, content, source, **extra):
    msg = {"role": role, "content": content, "source": source, **extra}
    fingerprint = json.dumps([role, content, extra.get("toolCalls"), extra.get("toolCallId")], sort_keys=True)
    msg["id"] = "m-" + hashlib.sha256(fingerprint.encode()).hexdigest()[:16]
    calls = extra.get("toolCalls")
    msg["tokens"] = estimate_tokens((content or "") + (json.dumps(calls) if calls else ""))
    return msg


class Handle:
    """A spawner's hold on a child across its successions: the current incarnation and its result."""

    def __init__(self, agent):
        self.agent = agent
        self.id = agent.id  # the id the spawner was handed
        self.done = False
        self.status = None  # the subagent-result status once done
        self.summary = ""
        self.collected = False
        self.ending = None  # (kind, summary, items): a board dispatch reads a reviewer's verdict from it


class Agent:
    def __init__(self, engine, agent_id, profile, *, parent=None, parent_id=None, depth=0, role="standard",
                 brief=None, machine=None, state=None, issue_id=None, worktree=None):
        self.engine = engine
        self.id = agent_id
        self.profile = profile
        self.parent = parent  # the spawner (a subagent or fork reports to it)
        self.parent_id = parent_id
        self.depth = depth
        self.role = role
        self.brief = brief
        self.machine, self.state = machine, state  # the machine shell profile and the state it stands in
        self.issue_id, self.worktree = issue_id, worktree  # a board-dispatched agent's issue and branch
        self.holdings = {}
        self.turns = 0
        self.consecutive = 0
        self.recent = deque(maxlen=engine.spec.limits.error_rate_window or 1)
        self.status = "running"  # "blocked" while it waits on subagents or an issue inside a call
        self.compaction = None  # a declared self-compaction, applied at the top of the next turn
        self.inbox = []
        self.children = []  # Handles
        self.handle = None  # the spawner's Handle on this agent
        self.pool = set()  # context_message ids already defined on this stream
        self.tool_calls = 0

    @property
    def workspace(self):
        return self.engine.workspace

    @property
    def window(self):
        return self.holdings["history"].impl.messages

    @property
    def reports_status(self):
        """Whether agent_status is on this stream: every spawned and board-dispatched agent (the root
        chain's ending is the session's)."""
        return self.parent_id is not None or self.issue_id is not None

    @property
    def in_machine_with_edges(self):
        return bool(self.machine and self.machine.state(self.state).transitions)

    def grants(self):
        config = self.profile.grant_config()
        memories = self.holdings.get("memories")
        if "memories" in config and memories is not None and not memories.writable:
            config["memories"] = dict(config["memories"], scope="read-only")
        return Grants(capabilities=config, operations=self.profile.operations, tools=self.profile.tools,
                      role=self.role, machine=self.in_machine_with_edges, roster=bool(self.profile.roster))

    def offered_tools(self):
        return self.grants().offered_tools() if self.profile.mode == "tool_calling" else []

    def store(self, kind):
        holding = self.holdings[kind]
        if not holding.enabled:
            raise ToolError("unavailable", f"this agent holds no {kind}")
        return holding.impl

    def params(self, capability_id):
        return self.profile.params(capability_id)

    def emit(self, type_, **fields):
        return self.engine.telemetry.emit(type_, self, **fields)


class Engine:
    def __init__(self, spec, telemetry, workspace_dir, should_cancel=lambda: False, provider=None):
        self.spec = spec
        self.telemetry = telemetry
        self.workspace = Workspace(workspace_dir)
        for path, contents in spec.workspace["files"].items():
            self.workspace.write_file(path, contents)
        self.registry = StoreRegistry(Path(workspace_dir))
        self.should_cancel = should_cancel
        self.provider = provider or make_provider(spec.provider)
        self.agents = []
        self.next_agent = 0
        self.root_handle = None
        self.stopping = None  # a SessionOver met inside a wait: the waiting turn closes, then it is raised
        self.cost = 0.0  # summed usage cost (USD), for maxCost
        self.compactions = 0
        self.started = time.monotonic()
        if spec.limits.max_runtime_secs:  # no host work (a shell, a search) outlasts the run's wall clock
            self.workspace.deadline = self.started + spec.limits.max_runtime_secs
        self.workspace.interrupt = self._interrupt
        self.slots = {}  # (profile, model) -> summed tokens
        self.errors = {kind: 0 for kind in ERROR_KINDS}
        self.errors_by_type = {}
        self.max_consecutive = 0
        self.code_executions = 0
        self.undocumented = Counter()  # {operation: calls} summed over every program's code_execution
        self.tool_failures = {}
        # board dispatch (runs.engine.issues): per issue its branch, implementer attempts, last summary
        self.branches, self.attempts, self.issue_summaries = {}, {}, {}
        self.issues_done = set()
        self.review_phases = Counter()

    # -- ids and incarnations --------------------------------------------------------------
    def mint_id(self):
        agent_id = f"agent-{self.next_agent}"
        self.next_agent += 1
        return agent_id

    def _system_prompt(self, profile, role):
        what = "Answer every turn with one program, submitted with submit_program." \
            if profile.mode == "responses_as_code" else "Work by calling tools."
        ending = {"standard": "End the session by calling finish with a summary.",
                  "review": "End with approve, or request_changes listing the changes."}.get(role, "")
        return f"You are {profile.name} ({profile.slug}), an agent run by gg. {what} {ending}".strip()

    def open(self, agent, opening_messages, holdings, from_state=None):
        """Emit an incarnation's opening events and make it runnable."""
        agent.holdings = holdings
        history = holdings["history"].impl
        history.messages[:] = [message("system", self._system_prompt(agent.profile, agent.role), "system")] + [
            m for m in history.messages if m["role"] != "system"] + opening_messages
        thread.stamp(history.messages, 0)
        agent.emit("agent_spawned", profileId=agent.profile.slug, modelId=agent.profile.model_id, depth=agent.depth,
                   cwd=str(self.workspace.root), brief=agent.brief, worktree=agent.worktree)
        if agent.machine:
            agent.emit("fsm_state", fsmId=agent.machine.slug, state=agent.state, profileId=agent.profile.slug,
                       **({"from": from_state} if from_state else {}))
        agent.emit("agent_modules", modules=[holdings[kind].row() for kind in MODULE_KINDS])
        surface = {"executionMode": agent.profile.mode, "tools": agent.offered_tools()}
        if agent.profile.mode == "responses_as_code":
            surface.update(apis=surface_apis(agent.profile.language, agent.grants()),
                           programLanguage=agent.profile.language, docViewTypes=agent.profile.doc_view_types)
        agent.emit("agent_surface", **surface)
        for kind in SNAPSHOT_KINDS:
            self.snapshot(agent, kind)
        if agent.reports_status:
            agent.emit("agent_status", status="running")
        self.agents.append(agent)
        self.telemetry.flush()

    def snapshot(self, agent, kind):
        holding = agent.holdings[kind]
        if holding.enabled and holding.impl is not None:
            snap = dict(holding.impl.snapshot())
            agent.emit(snap.pop("type"), **snap)

    def start_root(self):
        root_profile = self.spec.root
        machine = state = None
        if root_profile.mode == "machine":
            machine, entry = root_profile, root_profile.states[0]
            root_profile, state = self.spec.profile(entry.agent), entry.name
        root = Agent(self, "root", root_profile, machine=machine, state=state)
        self.root_handle = root.handle = Handle(root)
        holdings = open_holdings(self.registry, root_profile)
        self.open(root, [message("user", self.spec.task, "user_prompt")], holdings)

    # -- the schedule ----------------------------------------------------------------------
    def run(self):
        self.telemetry.emit("session_started", capabilitySet=self.spec.capability_set())
        status, breach = "internal_error", None
        try:
            self.start_root()
            status = self._schedule()
        except SessionOver as over:
            status, breach = over.status, over.breach
        except Exception as exc:  # a defect of the engine: recorded, never lost
            log.exception("engine run %s failed", self.telemetry.session_id)
            self.telemetry.emit("log", level="error", message=f"the engine failed: {type(exc).__name__}: {exc}")
            status = "internal_error"
        self._epilogue(status, breach)
        return status

    def _schedule(self):
        while not self.root_handle.done:
            runnable = [a for a in self.agents if a.status == "running"]
            if not runnable:
                self.telemetry.emit("log", level="error", message="no agent can run and the root has not ended")
                return "internal_error"
            self._round(runnable)
        return "completed"

    def _round(self, agents):
        """One round: at most maxParallel of `agents` take a turn each, in spawn order."""
        for agent in agents[: self.spec.limits.max_parallel]:
            if agent.status == "running" and not self.root_handle.done:
                try:
                    self._boundary(agent)
                    self.turn(agent)
                except SessionOver as over:
                    if over.agent is None or over.agent.handle is self.root_handle:
                        raise
                    self._fail(over)

    def _boundary(self, agent):
        """What is checked before a turn starts: cancel, the wall clock, the agent's turn allowance."""
        limits = self.spec.limits
        if self.should_cancel():
            self.telemetry.emit("log", level="warn", message="the operator canceled the run")
            raise SessionOver("canceled")
        elapsed = time.monotonic() - self.started
        if limits.max_runtime_secs and elapsed >= limits.max_runtime_secs:
            raise SessionOver("timed_out", self._breach(agent, "runtime", limits.max_runtime_secs, round(elapsed, 3)))
        if limits.max_turns and agent.turns >= limits.max_turns:
            raise SessionOver("exhausted", self._breach(agent, "turns", limits.max_turns, agent.turns), agent)
        if limits.max_cost and self.cost >= limits.max_cost:
            raise SessionOver("limit_exceeded", self._breach(agent, "cost", limits.max_cost, round(self.cost, 6)))

    def _interrupt(self):
        """Why a running shell is killed now (the run's wall clock is the workspace deadline)."""
        return "the operator canceled the run" if self.should_cancel() else None

    def _breach(self, agent, limit, threshold, observed, window=None):
        breach = {"limit": limit, "threshold": threshold, "observed": observed, "turns": agent.turns,
                  "agentId": agent.id}
        if window is not None:
            breach["window"] = window
        agent.emit("limit_exceeded", breach=breach)
        return breach

    # -- one turn --------------------------------------------------------------------------
    def turn(self, agent):
        t0 = time.monotonic()
        agent.turns += 1
        agent.emit("turn_started")
        if agent.compaction:
            self.compactions += 1
            thread.compact(self, agent, **agent.compaction)
            agent.compaction = None
        if agent.inbox:
            agent.window.extend(agent.inbox)
            agent.inbox = []
        request_msgs = list(agent.window)
        self._breakdown(agent, request_msgs)
        offered = agent.offered_tools()
        if agent.profile.mode == "responses_as_code":
            tools, force = [SUBMIT_PROGRAM], "submit_program"
        else:
            tools, force = [{"name": name, "description": name.replace("_", " "),
                             "parameters": toolcalls.schema(name)} for name in offered], None
        request = Request(agent.id, agent.profile.slug, agent.profile.model_id, _chat(request_msgs), tools, force)
        t1 = time.monotonic()
        try:
            reply = self.provider.complete(request)
        except ProviderError as exc:
            t2 = time.monotonic()
            self.telemetry.emit("log", level="error", message=f"the model call failed ({exc.error_type}): {exc}")
            self._outcome(agent, "error", "model_api", exc.error_type)
            self._timing(agent, t0, t1, t2)
            if exc.status:
                raise SessionOver(exc.status) from None
            self._ceilings(agent)
            return
        t2 = time.monotonic()
        calls = [{"id": c.id, "name": c.name, "args": c.args} for c in reply.tool_calls]
        response = message("assistant", reply.text or None, "assistant", toolCalls=calls)
        agent.window.append(response)
        for msg in request_msgs + [response]:
            if msg["id"] not in agent.pool:
                agent.pool.add(msg["id"])
                agent.emit("context_message", id=msg["id"], role=msg["role"], content=msg["content"],
                           tokens=msg["tokens"], label=msg.get("label"), toolCallId=msg.get("toolCallId"),
                           toolCalls=msg.get("toolCalls") or [], images=[])
        agent.emit("prompt", request=[{"id": m["id"], "source": m["source"]} for m in request_msgs],
                   responseId=response["id"], totalTokens=sum(m["tokens"] for m in request_msgs),
                   finishReason=reply.finish_reason, tokens=reply.tokens, durationMs=int((t2 - t1) * 1000),
                   provider=reply.provider, cost=reply.cost)
        agent.emit("usage", profileId=agent.profile.slug, modelId=agent.profile.model_id, tokens=reply.tokens,
                   cost=reply.cost, provider=reply.provider)
        self._count_usage(agent, reply.tokens, reply.cost)
        if reply.text:
            agent.emit("assistant_message", text=reply.text)
        agent.ending, agent.succession, agent.forks = None, None, []
        chars = len(reply.text or "") + sum(len(c.args.get("program") or "") for c in reply.tool_calls
                                            if c.name == "submit_program")
        if agent.profile.mode == "responses_as_code":
            error = self._code_turn(agent, reply)
        else:
            error = self._tool_turn(agent, reply, offered)
        if agent.ending:
            self._outcome(agent, "finished", responseChars=chars)
        elif error:
            self._outcome(agent, "error", error[0], error[1], responseChars=chars)
        else:
            self._outcome(agent, "progressed", responseChars=chars)
        self._timing(agent, t0, t1, t2)
        thread.stamp(agent.window, agent.turns)
        if self.stopping:
            raise self.stopping
        self._close(agent)
        self._ceilings(agent)

    def _breakdown(self, agent, msgs):
        by_source, total, fullness = self.bands(agent, msgs)
        agent.emit("context_breakdown", bySource=by_source, totalTokens=total,
                   windowLimit=self.window_limit(agent), fullness=fullness)

    def window_limit(self, agent):
        return agent.params("context-window-override").get("windowLimit") \
            if agent.profile.enabled("context-window-override") else DEFAULT_WINDOW

    def bands(self, agent, msgs):
        """The window's tokens per band (in band order), its total and its fullness."""
        totals = dict.fromkeys(BANDS, 0)
        for m in msgs:
            totals[m["source"]] += m["tokens"]
        total = sum(totals.values())
        return [{"source": b, "tokens": totals[b]} for b in BANDS], total, round(total / self.window_limit(agent), 6)

    def _count_usage(self, agent, tokens, cost):
        slot = self.slots.setdefault((agent.profile.slug, agent.profile.model_id), {})
        for key, value in tokens.items():
            if value is not None:
                slot[key] = slot.get(key, 0) + value
        if cost:
            self.cost += next((cost[k] for k in ("comparable", "actual") if cost.get(k) is not None), 0)

    def _outcome(self, agent, outcome, error=None, error_type=None, **extra):
        is_error = outcome == "error"
        agent.consecutive = agent.consecutive + 1 if is_error else 0
        agent.recent.append(is_error)
        if is_error:
            self.errors[error] += 1
            self.errors_by_type[error_type] = self.errors_by_type.get(error_type, 0) + 1
            self.max_consecutive = max(self.max_consecutive, agent.consecutive)
        agent.emit("turn_outcome", outcome=outcome, error=error, errorType=error_type,
                   consecutiveErrors=agent.consecutive, turns=agent.turns, **extra)

    def _timing(self, agent, t0, t1, t2):
        t3 = time.monotonic()
        agent.emit("turn_timing", promptMs=int((t1 - t0) * 1000), requestMs=int((t2 - t1) * 1000),
                   responseMs=int((t3 - t2) * 1000))
        self.telemetry.flush()

    def _ceilings(self, agent):
        limits = self.spec.limits
        if limits.max_consecutive_errors and agent.consecutive >= limits.max_consecutive_errors:
            raise SessionOver("limit_exceeded", self._breach(agent, "consecutive_errors",
                                                             limits.max_consecutive_errors, agent.consecutive),
                              agent)
        window = limits.error_rate_window
        if window and len(agent.recent) == window:
            rate = sum(agent.recent) / window
            if rate > limits.max_error_rate:
                raise SessionOver("limit_exceeded", self._breach(agent, "error_rate", limits.max_error_rate,
                                                                 rate, window), agent)

    # -- tool calling ----------------------------------------------------------------------
    def _tool_turn(self, agent, reply, offered):
        if not reply.tool_calls:
            agent.window.append(message("user", "Your reply called no tool. Work by calling tools, and end the "
                                        "session with one of: " + ", ".join(t for t in offered if t in ENDING_TOOLS)
                                        + ".", "system"))
            return ("missing_completion", "missing_completion_no_call")
        for call in reply.tool_calls:
            agent.emit("tool_call", name=call.name, args=call.args)
            try:
                if call.name not in offered:
                    raise ToolError("unavailable", f"`{call.name}` is not a tool this agent was offered")
                if call.name in ENDING_TOOLS:
                    summary, content = self._ending(agent, call.name, call.args)
                elif call.name in DELEGATION:
                    summary, content = self._delegate(agent, call.name, call.args)
                elif call.name == "wait_for_issue":
                    content = issues.wait(self, agent, call.args.get("issue_id"))
                    summary = content.split(":", 1)[0]
                else:
                    summary, content, changed = toolcalls.dispatch(agent, call.name, call.args)
                    agent.tool_calls += 1
                    for kind in changed:
                        self.snapshot(agent, kind)
                agent.emit("tool_result", name=call.name, ok=True, summary=summary)
            except ToolError as exc:
                summary, content = None, f"error ({exc.code}): {exc.message}"
                self.tool_failures[exc.code] = self.tool_failures.get(exc.code, 0) + 1
                agent.emit("tool_result", name=call.name, ok=False, summary=exc.message, failure=exc.code)
            agent.window.append(message("tool", content, "tool_output", toolCallId=call.id))
        return None

    def _ending(self, agent, name, args):
        if name == "finish":
            summary = args.get("summary")
            if not isinstance(summary, str) or not summary.strip():
                raise ToolError("invalid-argument", "finish needs a non-empty summary")
            agent.ending = ("finish", summary.strip(), None)
        elif name == "approve":
            agent.ending = ("approve", "approved", None)
        else:
            items = [i.strip() for i in args.get("items") or [] if isinstance(i, str) and i.strip()]
            if not items:
                raise ToolError("invalid-argument", "request_changes needs at least one change")
            agent.ending = ("request_changes", "changes requested:\n" + "\n".join(f"- {i}" for i in items), items)
        return name.replace("_", " "), "the session ends when this turn closes"

    # -- delegation (both modes) -----------------------------------------------------------
    def _delegate(self, agent, name, args):
        if name == "spawn_subagent":
            child = self.spawn(agent, args.get("agent"), args.get("prompt"))
            return f"spawned {child.id}", json.dumps({"agentId": child.id})
        if name == "wait_for_subagents":
            results = self.wait(agent, args.get("ids"))
            return f"{len(results)} returned", json.dumps(results)
        if name == "send_message":
            self.send(agent, args.get("to"), args.get("message"))
            return f"sent to {args.get('to')}", "sent"
        if agent.succession is not None and name in ("exec", "transition_state"):
            raise ToolError("refused", "a succession is already declared this turn; the first one stands")
        if name == "exec":
            entry = agent.profile.roster_entry(args.get("agent"))
            if entry is None or "subagent" not in entry.scopes:
                raise ToolError("invalid-argument", f"{args.get('agent')!r} is not in this agent's roster")
            agent.succession = ("exec", entry.agent, args.get("prompt"))
            return f"exec {entry.agent}", "the session is handed on when this turn closes"
        if name == "transition_state":
            edge = next((t for t in agent.machine.state(agent.state).transitions if t.to == args.get("to")), None)
            if edge is None:
                raise ToolError("invalid-argument", f"there is no edge from {agent.state} to {args.get('to')!r}")
            agent.succession = ("fsm", edge, args.get("prompt"))
            return f"transition to {edge.to}", "the machine moves when this turn closes"
        fork_id = self.mint_id()
        agent.forks.append((fork_id, args.get("prompt") or ""))
        return f"fork {fork_id}", json.dumps({"agentId": fork_id})

    def spawn(self, parent, slug, prompt):
        entry = parent.profile.roster_entry(slug)
        if entry is None:
            raise ToolError("invalid-argument", f"{slug!r} is not in this agent's roster")
        if not isinstance(prompt, str) or not prompt.strip():
            raise ToolError("invalid-argument", "a subagent needs a prompt")
        max_depth = parent.params("subagents").get("maxDepth")
        if max_depth is not None and parent.depth + 1 > max_depth:
            raise ToolError("limit-exceeded", f"subagents nest at most {max_depth} deep")
        profile = self.spec.profile(entry.agent)
        child = Agent(self, self.mint_id(), profile, parent=parent, parent_id=parent.id, depth=parent.depth + 1,
                      role=entry.role, brief=prompt)
        child.handle = Handle(child)
        parent.children.append(child.handle)
        self.open(child, [message("user", prompt, "user_prompt")],
                  open_holdings(self.registry, profile, parent_holdings=parent.holdings))
        return child

    def send(self, sender, to, text):
        if not isinstance(text, str) or not text.strip():
            raise ToolError("invalid-argument", "the message is empty")
        targets = {h.agent.id: h.agent for h in sender.children if not h.done}
        if sender.parent is not None:
            targets[sender.parent.id] = self._current(sender.parent)
        target = targets.get(to)
        if target is None:
            raise ToolError("not-found", f"no running agent {to!r} this agent can reach")
        target.inbox.append(message("user", f"Message from {sender.id}: {text}", "user_prompt"))

    def _current(self, agent):
        return agent.handle.agent if agent.handle else agent

    def wait(self, agent, ids=None):
        """wait_for_subagents: the awaited children (every uncollected one when `ids` is None) run to
        their end inside the call while `agent` is blocked; returns their subagent results."""
        if ids is None:
            handles = [h for h in agent.children if not h.collected]
        else:
            known = {h.id: h for h in agent.children}
            unknown = [i for i in ids if i not in known]
            if unknown:
                raise ToolError("not-found", f"no subagent of this agent is called {', '.join(map(repr, unknown))}")
            handles = [known[i] for i in ids]
        pending = [h for h in handles if not h.done]
        if pending:
            self.block(agent, ", ".join(h.id for h in pending), lambda: self.run_out(pending))
        for h in handles:
            h.collected = True
        return [{"id": h.id, "status": h.status, "summary": h.summary} for h in handles]

    def block(self, agent, waiting_on, work):
        """Run `work` (other agents' turns) inside `agent`'s call: it frees its slot (`blocked`) and
        resumes (`running`) when the work is over. A run-wide stop met inside fails the call."""
        if self.stopping:
            raise _stopped(self.stopping, waiting_on)
        agent.status = "blocked"
        agent.emit("agent_status", status="blocked", waitingOn=waiting_on)
        try:
            work()
        except SessionOver as over:
            self.stopping = over
        agent.status = "running"
        agent.emit("agent_status", status="running")
        if self.stopping:
            raise _stopped(self.stopping, waiting_on)

    def run_out(self, handles):
        """Rounds of `handles`' agents until every one has ended (or been stopped by its own ceiling)."""
        while not all(h.done for h in handles):
            self._round([h.agent for h in handles if not h.done])

    # -- turn close: endings, successions, forks ------------------------------------------
    def _close(self, agent):
        if agent.ending:
            self._end(agent, agent.ending[1])
            return
        if agent.succession:
            self._succeed(agent, *agent.succession)
        for fork_id, prompt in agent.forks:
            self._fork(agent, fork_id, prompt)

    def _end(self, agent, summary):
        agent.status = "done"
        handle = agent.handle
        handle.done, handle.status, handle.summary = True, "completed", summary
        handle.ending = agent.ending
        if handle is not self.root_handle:  # the root's chain ending ends the session
            agent.emit("agent_returned", summary=summary)
            agent.emit("agent_status", status="done")
        self.telemetry.flush()

    def _fail(self, over):
        """A subagent's or fork's own ceiling: its chain stops and the spawner collects the status."""
        agent = over.agent.handle.agent  # the chain's current incarnation
        agent.status = "failed"
        handle = agent.handle
        handle.done, handle.status = True, over.status
        handle.summary = f"stopped by its {over.breach['limit']} ceiling ({over.status})"
        agent.emit("agent_status", status="failed")
        self.telemetry.flush()

    def _succeed(self, agent, kind, target, prompt):
        machine, state, from_state, transfer = agent.machine, agent.state, None, None
        if kind == "fsm":
            from_state, state, transfer = agent.state, target.to, target.transfer
            profile = self.spec.profile(machine.state(state).agent)
        else:
            profile = self.spec.profile(target)
        spawner_holdings = agent.parent.holdings if agent.parent else None
        holdings, rows = succeed(self.registry, kind, agent.holdings, profile, transfer, spawner_holdings)
        successor = Agent(self, self.mint_id(), profile, parent=agent.parent, parent_id=agent.id,
                          depth=agent.depth, role=agent.role, brief=prompt, machine=machine, state=state,
                          issue_id=agent.issue_id, worktree=agent.worktree)
        successor.turns = agent.turns  # one allowance across the chain
        successor.handle = agent.handle
        agent.handle.agent = successor
        agent.emit("agent_transition", kind=kind, toAgentId=successor.id, profileId=profile.slug,
                   state=state if machine else None, modules=rows)
        agent.status = "done"
        if agent.reports_status:
            agent.emit("agent_status", status="done")
        opening = [message("user", prompt, "user_prompt")] if prompt else []
        if not opening and not holdings["history"].store is agent.holdings["history"].store:
            opening = [message("user", self.spec.task if agent.handle is self.root_handle else agent.brief or "",
                               "user_prompt")]
        self.open(successor, opening, holdings, from_state=from_state)

    def _fork(self, agent, fork_id, prompt):
        holdings, rows = succeed(self.registry, "fork", agent.holdings, agent.profile)
        copy_ = Agent(self, fork_id, agent.profile, parent=agent, parent_id=agent.id, depth=agent.depth + 1,
                      role=agent.role, brief=prompt, machine=agent.machine, state=agent.state)
        copy_.turns = agent.turns
        copy_.handle = Handle(copy_)
        agent.children.append(copy_.handle)
        agent.emit("agent_transition", kind="fork", toAgentId=fork_id, profileId=agent.profile.slug,
                   state=agent.state if agent.machine else None, modules=rows)
        self.open(copy_, [message("user", prompt, "user_prompt")] if prompt else [], holdings)

    # -- code agents -----------------------------------------------------------------------
    def _code_turn(self, agent, reply):
        from runs.engine import codeturn  # the membrane loads wasmtime; tool-calling runs never need it

        return codeturn.run(self, agent, reply)

    # -- the epilogue ----------------------------------------------------------------------
    def _epilogue(self, status, breach):
        root = self.root_handle.agent if self.root_handle else None
        for (profile, model), tokens in self.slots.items():
            self.telemetry.emit("slot_usage", root, profileId=profile, modelId=model, tokens=_full(tokens))
        turns = sum(a.turns for a in self.agents if a.handle and a.handle.agent is a)
        total = sum(sum(v for v in t.values()) for t in self.slots.values())
        self.telemetry.emit("log", root, level="info",
                            message=f"session ended ({status}) after {turns} turn(s); {total} total tokens.")
        spawned = [a for a in self.agents if a.id != "root"]
        board = self.registry.run_wide.get("board")
        summary = {
            "terminalStatus": status, "agentsSpawned": len(self.agents), "subagentCount": len(spawned),
            "maxSubagentDepth": max((a.depth for a in self.agents), default=0), "compactions": self.compactions,
            "ranOutOfContext": False, "contextOverflowCount": 0, "issueReviews": self.review_phases["requested"],
            "reviewCycles": self.review_phases["changes_requested"] + self.review_phases["approved"],
            "issuesReopened": self.review_phases["changes_requested"], "executionMode": self.spec.root.mode if self.spec.root.mode != "machine"
            else self.spec.profile(self.spec.root.states[0].agent).mode,
            "codeExecutions": self.code_executions, "compileMs": 0,
            "errors": {"turns": sum(a.turns for a in self.agents), "errors": sum(self.errors.values()),
                       "maxConsecutive": self.max_consecutive, "modelApi": self.errors["model_api"],
                       "transpile": self.errors["transpile"], "programFault": self.errors["program_fault"],
                       "sandboxLimit": self.errors["sandbox_limit"],
                       "missingCompletion": self.errors["missing_completion"], "loopAborts": 0,
                       "loopAbortWords": 0, "loopAbortChars": 0, "byType": self.errors_by_type,
                       "toolFailures": self.tool_failures},
            "undocumentedCalls": {"calls": sum(self.undocumented.values()), "operations": dict(self.undocumented)},
            "issuesCreated": len(board.impl.issues) if board else 0, "issuesCompleted": len(self.issues_done),
            "slotCosts": [{"profileId": p, "modelId": m, "tokens": _full(t)} for (p, m), t in self.slots.items()],
            "effectiveTools": root.offered_tools() if root else [],
            "limits": self.spec.capability_set()["limits"],
        }
        if breach:
            summary["limitHit"] = breach
        self.telemetry.emit("session_summary", root, summary=summary)
        self.telemetry.emit("session_ended", root, status=status)
        self.telemetry.flush()


def _stopped(over, waiting_on):
    """The failure a wait ends in when the run stops while other agents run inside it."""
    return ToolError("limit-exceeded" if over.breach else "other",
                     f"the run stopped ({over.status}) while this agent waited on {waiting_on}")


def _full(tokens):
    return {key: tokens.get(key) for key in ("uncachedInput", "cachedInput", "output", "reasoning")}


def _chat(msgs):
    """The window in the chat-completions shape."""
    out = []
    for m in msgs:
        entry = {"role": m["role"], "content": m["content"]}
        if m.get("toolCalls"):
            entry["tool_calls"] = [{"id": c["id"], "type": "function",
                                    "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                                   for c in m["toolCalls"]]
        if m.get("toolCallId"):
            entry["tool_call_id"] = m["toolCallId"]
        out.append(entry)
    return out
