"""Delegation, the engine's half that spans agents: spawning a subagent, waiting on subagents (the
awaited run inside the caller's call), messages, and at a turn's close the endings, successions
(exec, fsm) and forks. Mixed into `runs.engine.loop.Engine`; both execution modes call it.
"""

import json

from runs.engine.agents import Agent, Handle, SessionOver, message
from runs.engine.holdings import open_holdings, succeed
from runs.engine.tools.errors import ToolError

# Agents a run may mint (subagents, forks and successors): only depth was bounded, and a program
# spawning in a loop at every depth reached 2,701 agents, each holding its stores in the server.
MAX_AGENTS = 1000


class Delegator:
    """The delegation methods of `Engine` (they read its spec, registry, agents and telemetry)."""

    # -- delegation (both modes) -----------------------------------------------------------
    def delegate(self, agent, name, args):
        """A delegation tool (runs.engine.toolcalls.DELEGATION) called by `agent`: (summary, content) for its result."""
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
        fork_id = self._new_agent_id()
        agent.forks.append((fork_id, args.get("prompt") or ""))
        return f"fork {fork_id}", json.dumps({"agentId": fork_id})

    def _new_agent_id(self):
        """An id for a subagent or a fork; `limit-exceeded` once the run has minted MAX_AGENTS (a
        succession, at a turn's close, is never refused: the chain replaces one agent)."""
        if self.next_agent >= MAX_AGENTS:
            raise ToolError("limit-exceeded", f"a run holds at most {MAX_AGENTS:,} agents")
        return self.mint_id()

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
        child = Agent(self, self._new_agent_id(), profile, parent=parent, parent_id=parent.id, depth=parent.depth + 1,
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
        finally:  # a failed dispatch (no worktree, say) fails the call, and the waiter runs again
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


def _stopped(over, waiting_on):
    """The failure a wait ends in when the run stops while other agents run inside it."""
    return ToolError("limit-exceeded" if over.breach else "other",
                     f"the run stopped ({over.status}) while this agent waited on {waiting_on}")
