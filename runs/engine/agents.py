"""The engine's agents: an incarnation (`Agent`), a spawner's hold on a child across its
successions (`Handle`), a window message (`message`) and a stop (`SessionOver`). A leaf: the loop,
delegation, the code and tool turns, the board and the thread all import it, it imports none of them.
"""

import hashlib
import json
from collections import deque

from runs.engine.tools.context_views import estimate_tokens
from runs.engine.tools.errors import ToolError
from surfaces.grants import Grants


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
        """The run's workspace as this agent writes to it: through its hooks (runs.engine.hooks)."""
        return self.engine.workspace_for(self)

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
