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

import json
import logging
import time
from collections import Counter
from pathlib import Path

from runs.engine import codeturn, thread, toolcalls
from runs.engine.agents import Agent, Handle, SessionOver, message
from runs.engine.delegation import Delegator
from runs.engine.hooks import HookedWorkspace, Hooks
from runs.engine.worktrees import Worktrees
from runs.engine.holdings import StoreRegistry, open_holdings
from runs.engine.providers import SUBMIT_PROGRAM, ProviderError, Request, make_provider
from runs.engine.sandbox.model_text import code_prompt
from runs.engine.spec import MODULE_KINDS
from runs.engine.summary import close_session
from runs.engine.tools.workspace import Workspace
from runs.ingest.writer import RunGone
from surfaces.arms import surface_apis

log = logging.getLogger(__name__)

BANDS = ("system", "user_prompt", "assistant", "tool_output", "compiler_error", "runtime_error", "file_view",
         "text_view", "docs_view", "search_results", "skill", "memory", "task_list", "history")
DEFAULT_WINDOW = 128_000
SNAPSHOT_KINDS = ("skills", "memories", "tasks", "board", "archive")  # the opening's snapshot order
# The error kinds a turn_outcome carries (gg's session_summary.errors counts each).
TURN_ERROR_KINDS = ("model_api", "transpile", "program_fault", "sandbox_limit", "missing_completion")



class Engine(Delegator):
    def __init__(self, spec, telemetry, workspace_dir, should_cancel=lambda: False, provider=None):
        self.spec = spec
        self.telemetry = telemetry
        self.workspace = Workspace(workspace_dir)
        for path, contents in spec.workspace["files"].items():
            self.workspace.write_file(path, contents)
        self.registry = StoreRegistry(Path(workspace_dir))
        self.hooks = Hooks(self)
        self.worktrees = Worktrees(self.workspace)
        self._agent_workspaces = {}
        self.should_cancel = should_cancel
        self.provider = provider or make_provider(spec.provider)
        self.agents = []
        self.next_agent = 0
        self.root_handle = None
        self.stopping = None  # a SessionOver met inside a wait: the waiting turn closes, then it is raised
        self.cost = 0.0  # summed usage cost (USD), for maxCost
        self.compactions = 0
        self.started = time.monotonic()
        if spec.limits.max_runtime_secs:  # no host work (a shell, a search, a write) outlasts the run's wall clock
            self.workspace.deadline = self.started + spec.limits.max_runtime_secs
            self.workspace.budget = f"the run's wall-clock limit of {spec.limits.max_runtime_secs:g} s"
        self.workspace.interrupt = self._interrupt
        self.slots = {}  # (profile, model) -> summed tokens
        self.errors = {kind: 0 for kind in TURN_ERROR_KINDS}
        self.errors_by_type = {}
        self.max_consecutive = 0
        self.code_executions = 0
        self.undocumented = Counter()  # {operation: calls} summed over every program's code_execution
        self.tool_failures = {}
        # board dispatch (runs.engine.issues): per issue its branch, implementer attempts, last summary
        self.branches, self.attempts, self.issue_summaries = {}, {}, {}
        self.issues_done = set()
        self.review_phases = Counter()

    def workspace_for(self, agent):
        """`agent`'s hand on the workspace: the run's, or its issue's worktree; through its hooks."""
        if agent.id not in self._agent_workspaces:
            base, path = self.workspace, self.worktrees.paths.get(agent.worktree)
            if path is not None:
                base = Workspace(path, quota_bytes=self.workspace.quota_bytes, max_entries=self.workspace.max_entries)
                base.deadline, base.budget = self.workspace.deadline, self.workspace.budget
                base.interrupt = self.workspace.interrupt
            self._agent_workspaces[agent.id] = HookedWorkspace(base, agent)
        return self._agent_workspaces[agent.id]

    # -- ids and incarnations --------------------------------------------------------------
    def mint_id(self):
        agent_id = f"agent-{self.next_agent}"
        self.next_agent += 1
        return agent_id

    def _system_prompt(self, agent):
        profile, role = agent.profile, agent.role
        what = "Answer every turn with one program, submitted with submit_program." \
            if profile.mode == "responses_as_code" else "Work by calling tools."
        ending = {"standard": "End the session by calling finish with a summary.",
                  "review": "End with approve, or request_changes listing the changes."}.get(role, "")
        prompt = f"You are {profile.name} ({profile.slug}), an agent run by gg. {what} {ending}".strip()
        if profile.mode == "responses_as_code":
            prompt += "\n\n" + code_prompt(profile.language, agent.grants())
        return prompt

    def open(self, agent, opening_messages, holdings, from_state=None):
        """Emit an incarnation's opening events and make it runnable."""
        agent.holdings = holdings
        history = holdings["history"].impl
        history.messages[:] = [message("system", self._system_prompt(agent), "system")] + [
            m for m in history.messages if m["role"] != "system"] + opening_messages
        thread.stamp(history.messages, 0)
        agent.emit("agent_spawned", profileId=agent.profile.slug, modelId=agent.profile.model_id, depth=agent.depth,
                   cwd=str(agent.workspace.root), brief=agent.brief, worktree=agent.worktree)
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
        self.hooks.post("agent-start", agent, profileId=agent.profile.slug, brief=agent.brief)
        self.agents.append(agent)
        self.telemetry.flush()

    def snapshot(self, agent, kind, records=None):
        """Record the state of the agent's store `kind`, within a turn's budget when `records` is given."""
        holding = agent.holdings[kind]
        if holding.enabled and holding.impl is not None:
            snap = dict(holding.impl.snapshot())
            if records is not None:
                records.add(snap, kind)
            else:
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
        opening = [message("user", self.spec.task, "user_prompt")]
        opening += [message("user", text, "user_prompt") for text in self.hooks.fire("session-start", task=self.spec.task).inserts]
        self.open(root, opening, holdings)

    # -- the schedule ----------------------------------------------------------------------
    def run(self):
        self.telemetry.emit("session_started", capabilitySet=self.spec.capability_set())
        status, breach = "internal_error", None
        try:
            self.start_root()
            status = self._schedule()
        except SessionOver as over:
            status, breach = over.status, over.breach
        except RunGone:  # deleted while it ran: nothing more can be recorded, so nothing more is done
            raise
        except Exception as exc:  # a defect of the engine: recorded, never lost
            log.exception("engine run %s failed", self.telemetry.session_id)
            self.telemetry.emit("log", level="error", message=f"the engine failed: {type(exc).__name__}: {exc}")
            status = "internal_error"
        if status != "hook_error":
            try:
                self.hooks.fire("session-end", status=status)
            except SessionOver as over:
                status = over.status
        close_session(self, status, breach)
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
            self.hooks.fire("pre-compact", agent)
            thread.compact(self, agent, **agent.compaction)
            agent.compaction = None
            self.hooks.post("post-compact", agent)
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
        self.telemetry.flush()  # the turn so far is on the page while the model answers
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
            error = codeturn.run(self, agent, reply)
        else:
            error = toolcalls.run_turn(self, agent, reply, offered)
        if agent.ending and not self.stopping:
            self.hooks.gate_ending(agent)  # a blocked ending is not taken: the session continues
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
