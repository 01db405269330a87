"""Grants: the single gate (operations.md §1.1 `Grants::permits`).

The membrane asks `permits` when a call arrives, the documentation search asks it to decide what
to show, and the prompt's module list asks it which modules to name — one answer for all three.
The tool-calling surface is the other vocabulary; `offered_tools` resolves it from the same facts.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field

from surfaces.arms import spelling_for
from surfaces.catalogue import BY_ID, ENDINGS, MODULES, OPERATIONS, TOOLS


def _normalise_capabilities(capabilities):
    """Accept ids, or a mapping id -> config ({"implementation": ..., params...}; None for none)."""
    if isinstance(capabilities, Mapping):
        return {cap: dict(config or {}) for cap, config in capabilities.items()}
    return {cap: {} for cap in capabilities}


@dataclass(frozen=True)
class Grants:
    """What one agent instance may call.

    capabilities: the enabled capability ids (or id -> config for the tool-calling gates).
    operations:   the profile's operation allowlist; None when the profile wrote none (everything
                  the capabilities buy), an empty collection grants nothing.
    tools:        the profile's tool allowlist, the same way, for a tool-calling agent.
    role:         the ending role the agent was dispatched in (standard, review, judge, none).
    machine:      standing in a machine state that has somewhere to go.
    roster:       the profile has a non-empty subagent roster (tool-calling gates only).
    """

    capabilities: object = ()
    operations: object = None
    tools: object = None
    role: str = "standard"
    machine: bool = False
    roster: bool = False
    config: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if self.role not in ENDINGS:
            raise ValueError(f"unknown ending role {self.role!r}; the roles are {', '.join(ENDINGS)}")
        config = _normalise_capabilities(self.capabilities)
        object.__setattr__(self, "config", config)
        object.__setattr__(self, "capabilities", frozenset(config))
        for name in ("operations", "tools"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, frozenset(value))

    def _allowed(self, op_id):
        return self.operations is None or op_id in self.operations

    def permits(self, op_id):
        """Whether a program of this agent may call the operation. Unknown ids are never permitted."""
        op = BY_ID.get(op_id)
        if op is None:
            return False
        binding = op.binding
        if binding.kind == "always":
            return True
        if binding.kind == "ending":
            return binding.role == self.role
        if binding.kind == "machine":
            # Machine-given, never written in an allowlist: where the instance stands decides.
            return self.machine
        return binding.capability in self.capabilities and self._allowed(op_id)

    def granted(self):
        """The permitted operation ids, in catalogue order."""
        return tuple(op.id for op in OPERATIONS if self.permits(op.id))

    def modules(self):
        """Modules this agent binds a function in, in presentation order: the prompt's module list."""
        return tuple(m for m in MODULES if any(self.permits(op.id) for op in m.operations))

    def refusal(self, op_id, language=None):
        """The message a refused call carries, or None when the call is permitted.

        It says the call is not available and, for an ending, which ending to use instead; it never
        says what would unlock it. Calls are spelled in the program's own language."""
        if self.permits(op_id):
            return None
        def spelled(op):
            return f"`{spelling_for(None, language, op)}`"

        message = f"{spelled(op_id)} is not available."  # gg's words
        op = BY_ID.get(op_id)
        if op is not None and op.binding.kind == "ending":
            instead = [spelled(alt) for alt in ENDINGS[self.role].operations]
            if instead:
                message += f" Use {' or '.join(instead)} instead."
        return message

    def offered_tools(self):
        """The tools a tool-calling agent is offered, in registry order, its role's endings last."""
        offered = [t.name for t in TOOLS if self._tool_gate(t) and (self.tools is None or t.name in self.tools)]
        return offered + list(ENDINGS[self.role].tools)

    def _tool_gate(self, tool):
        name = tool.name
        if name == "transition_state":
            return self.machine
        if tool.capability not in self.capabilities:
            return False
        if tool.capability == "memories":
            return name in _memory_tools(self.config["memories"])
        if name == "compact":
            return self.config["compaction"].get("implementation") == "self-compaction"
        if name == "spawn_subagent":
            return self.roster
        if name in ("wait_for_subagents", "send_message"):
            return self.roster or "fork" in self.capabilities
        if name == "exec":
            return self.roster and not self.machine
        if name == "fork":
            return "subagents" in self.capabilities
        return True


def _memory_tools(config):
    """Memory tools by strategy and handle (operations.md §5)."""
    strategy = config.get("implementation") or "scratchpad"
    writable = config.get("scope") != "read-only"
    tools = set()
    if strategy == "scratchpad":
        tools |= {"write_memory", "update_memory"}
    else:
        tools |= {"create_memory", "edit_memory", "read_memory"}
    if strategy == "keyword-search":
        tools.add("search_memories")
    tools.add("delete_memory")
    if not writable:
        tools &= {"read_memory", "search_memories"}
    return tools
