"""gg's model-facing vocabulary: the 52 operations, the modules, the capabilities, the tools, the endings.

Facts come from spec/operations.md (§1 the operations table, §1.3 the capabilities, §3 the
modules, §5 the tool-calling surface). This module is data plus look-ups; the gate is
`surfaces.grants`, the spellings are `surfaces.arms`.

Operation ids are `namespace.key` (`files.read_file`); the namespace is the module and the WIT
interface, and the key in kebab-case is the WIT function (`files` / `read-file`).
"""

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any


@dataclass(frozen=True)
class Binding:
    """What buys an operation: a capability, an ending role, a machine state, or nothing at all."""

    kind: str  # "capability" | "ending" | "machine" | "always"
    capability: str | None = None
    role: str | None = None

    def __str__(self):
        if self.kind == "capability":
            return f"Capability({self.capability})"
        if self.kind == "ending":
            return f"Ending({self.role.capitalize()})"
        return self.kind.capitalize()


def Capability(capability_id):  # noqa: N802 — reads like the spec's `Capability(id)`
    return Binding("capability", capability=capability_id)


def Ending(role):  # noqa: N802
    return Binding("ending", role=role)


MACHINE = Binding("machine")
ALWAYS = Binding("always")


@dataclass(frozen=True)
class Operation:
    id: str
    family: str
    binding: Binding
    takes_input: bool
    tool: str | None  # the gg tool that runs underneath; None where no tool is dispatched
    retired: bool = False  # dropped by newer gg; kept because recorded streams carry it

    @property
    def module(self):
        return self.id.split(".", 1)[0]

    @property
    def key(self):
        return self.id.split(".", 1)[1]

    @property
    def wit_interface(self):
        return self.module

    @property
    def wit_function(self):
        return self.key.replace("_", "-")


# One skills family per namespace (operations.md §1.1); `board` is the project family.
FAMILIES = MappingProxyType({
    "shell": "gg-shell",
    "files": "gg-filesystem",
    "skills": "gg-skills",
    "memories": "gg-memory",
    "tasks": "gg-tasks",
    "board": "gg-project",
    "context": "gg-context",
    "delegation": "gg-delegation",
    "docs": "gg-docs",
    "views": "gg-views",
    "programs": "gg-programs",
    "session": "gg-session",
})


def _op(op_id, binding, tool, *, takes_input=True, retired=False):
    return Operation(op_id, FAMILIES[op_id.split(".", 1)[0]], binding, takes_input, tool, retired)


_PM = Capability("project-management")
_AMC = Capability("agent-managed-context")

# operations.md §1.2, in table order.
OPERATIONS = (
    _op("shell.shell", Capability("shell"), "shell"),
    _op("files.read_file", Capability("read-file"), "read_file"),
    _op("files.read_text_file", Capability("read-file"), "read_file", retired=True),
    _op("files.write_file", Capability("write-file"), "write_file"),
    _op("files.edit_file", Capability("edit-file"), "edit_file"),
    _op("files.list_dir", Capability("list-dir"), "list_dir"),
    _op("files.search", Capability("search"), "search"),
    _op("files.tree", Capability("list-dir"), "tree"),
    _op("skills.read_skill", Capability("skills"), "read_skill"),
    _op("memories.write_memory", Capability("memories"), "write_memory"),
    _op("memories.update_memory", Capability("memories"), "update_memory"),
    _op("memories.create_memory", Capability("memories"), "create_memory"),
    _op("memories.read_memory", Capability("memories"), "read_memory"),
    _op("memories.edit_memory", Capability("memories"), "edit_memory"),
    _op("memories.search_memories", Capability("memories"), "search_memories"),
    _op("memories.delete_memory", Capability("memories"), "delete_memory"),
    _op("tasks.add_task", Capability("tasks"), "add_task"),
    _op("tasks.update_task", Capability("tasks"), "update_task"),
    _op("tasks.set_blocked_by", Capability("tasks"), "set_blocked_by"),
    _op("tasks.complete_task", Capability("tasks"), "complete_task"),
    _op("tasks.remove_task", Capability("tasks"), "remove_task"),
    _op("board.create_epic", _PM, "create_epic"),
    _op("board.create_issue", _PM, "create_issue"),
    _op("board.update_issue", _PM, "update_issue"),
    _op("board.set_issue_blocked_by", _PM, "set_issue_blocked_by"),
    _op("board.remove_epic", _PM, "remove_epic"),
    _op("board.remove_issue", _PM, "remove_issue"),
    _op("board.wait_for_issue", _PM, "wait_for_issue"),
    _op("context.evict_file_view", _AMC, "evict_file_view"),
    _op("context.archive_thread", _AMC, "archive_thread"),
    _op("context.search_archive", _AMC, "search_archive"),
    _op("context.compact", Capability("compaction"), "compact"),
    _op("delegation.spawn_subagent", Capability("subagents"), "spawn_subagent"),
    _op("delegation.wait_for_subagents", Capability("subagents"), "wait_for_subagents"),
    _op("delegation.send_message", Capability("subagents"), "send_message"),
    _op("delegation.transition_state", MACHINE, "transition_state"),
    _op("delegation.exec", Capability("exec"), "exec"),
    _op("delegation.fork", Capability("fork"), "fork"),
    _op("docs.search", ALWAYS, None),
    _op("docs.close", Capability("docview-close"), None),
    _op("docs.close_all", Capability("docview-close"), None, takes_input=False),
    _op("views.open_file", Capability("read-file"), "read_file"),
    _op("views.open_text", ALWAYS, None),
    _op("views.open_docs_view", ALWAYS, None),
    _op("views.close", _AMC, None),
    _op("views.current", _AMC, None, takes_input=False, retired=True),
    _op("programs.history", Capability("program-library"), None, takes_input=False),
    _op("programs.get", Capability("program-library"), None),
    _op("programs.rerun", Capability("program-library"), None),
    _op("session.finish", Ending("standard"), None),
    _op("session.approve", Ending("review"), None, takes_input=False),
    _op("session.request_changes", Ending("review"), None),
)

BY_ID = MappingProxyType({op.id: op for op in OPERATIONS})


def operation(op_id):
    """The operation with this id, or None (an unknown id is never guessed at)."""
    return BY_ID.get(op_id)


@dataclass(frozen=True)
class Module:
    id: str
    brief: str  # the one line the prompt and the agent surface introduce the module by

    @property
    def family(self):
        return FAMILIES.get(self.id)  # `core` has none

    @property
    def operations(self):
        return tuple(op for op in OPERATIONS if op.module == self.id)


# operations.md §3: presentation order, briefs from the TypeScript SDK's doc comments.
MODULES = (
    Module("files", "Read, write, edit, list, walk and search the files of the workspace."),
    Module("shell", "Run shell commands in the workspace."),
    Module("board", "The epic and issue board, shared by every agent in the run."),
    Module("tasks", "The task list: a directed acyclic graph of work this agent is tracking for itself."),
    Module("memories", "Durable notes that survive a compaction of the context window."),
    Module("docs", "Find a module, function or type by searching, and take a documentation view back out of the window."),
    Module("views", "Show a file, a value, or an entry's documentation in the context window."),
    Module("context", "Manage the agent's own context window."),
    Module("delegation", "Hand scoped work to child agents, and hand this session on to another agent."),
    Module("skills", "Read the skills this agent was given."),
    Module("programs", "Fetch a program that already ran, and hand a patched copy back to be run in its place."),
    Module("session", "End the session."),
    Module("core", "The types every other capability module speaks in."),
)

MODULES_BY_ID = MappingProxyType({m.id: m for m in MODULES})


@dataclass(frozen=True)
class Tool:
    """A tool-calling tool: a separate vocabulary from the operations (a tool name is not an id)."""

    name: str
    capability: str
    family: str
    condition: str = ""  # further gate beyond the capability, as gg words it


def _tools(capability, family, names, condition=""):
    return tuple(Tool(name, capability, family, condition) for name in names)


# operations.md §5, in registry order (ALL_TOOL_NAMES plus `tree` and `search`).
TOOLS = (
    _tools("shell", "gg-shell", ["shell"])
    + _tools("read-file", "gg-filesystem", ["read_file"])
    + _tools("write-file", "gg-filesystem", ["write_file"])
    + _tools("edit-file", "gg-filesystem", ["edit_file"])
    + _tools("list-dir", "gg-filesystem", ["list_dir", "tree"])
    + _tools("search", "gg-filesystem", ["search"])
    + _tools("skills", "gg-skills", ["read_skill"], "the skill library is non-empty")
    + _tools("memories", "gg-memory", ["write_memory", "update_memory"], "scratchpad strategy; writable handle")
    + _tools("memories", "gg-memory", ["create_memory"], "markdown or keyword-search strategy; writable handle")
    + _tools("memories", "gg-memory", ["read_memory"], "markdown or keyword-search strategy; read-only holders too")
    + _tools("memories", "gg-memory", ["edit_memory"], "markdown or keyword-search strategy; writable handle")
    + _tools("memories", "gg-memory", ["search_memories"], "keyword-search strategy only")
    + _tools("memories", "gg-memory", ["delete_memory"], "any strategy; writable handle")
    + _tools("tasks", "gg-tasks",
             ["add_task", "update_task", "set_blocked_by", "complete_task", "remove_task"],
             "holds a task-list module")
    + _tools("project-management", "gg-project",
             ["create_epic", "create_issue", "update_issue", "set_issue_blocked_by", "remove_epic",
              "remove_issue", "wait_for_issue"],
             "holds the run's board")
    + _tools("agent-managed-context", "gg-context", ["evict_file_view", "archive_thread", "search_archive"],
             "holds a thread archive")
    + _tools("compaction", "gg-context", ["compact"], "self-compaction strategy, or self-summarization in code mode")
    + _tools("subagents", "gg-delegation", ["spawn_subagent"], "non-empty roster")
    + _tools("subagents", "gg-delegation", ["wait_for_subagents", "send_message"], "non-empty roster, or fork capable")
    + _tools("fsm", "gg-delegation", ["transition_state"],
             "standing in a machine state that has outgoing edges (the capability is the machine shell's)")
    + _tools("exec", "gg-delegation", ["exec"], "non-empty roster and not in a machine state")
    + _tools("fork", "gg-delegation", ["fork"], "also requires subagents")
)

TOOLS_BY_NAME = MappingProxyType({t.name: t for t in TOOLS})

# Families as the reference groups tools (console.md §1.9), in its order.
FAMILY_LABELS = MappingProxyType({
    "gg-filesystem": "Filesystem",
    "gg-shell": "Shell",
    "gg-project": "Project management",
    "gg-tasks": "Tasks",
    "gg-memory": "Memories",
    "gg-skills": "Skills",
    "gg-context": "Context",
    "gg-delegation": "Delegation",
    "gg-docs": "Documentation",
    "gg-views": "Views",
    "gg-programs": "Program library",
    "gg-session": "Ending the session",
})


@dataclass(frozen=True)
class EndingSet:
    """The calls an agent dispatched in one role may end on, in both vocabularies."""

    role: str
    description: str
    tools: tuple  # synthetic tool-calling tools, appended after the registry tools
    operations: tuple  # responses-as-code operation ids


# operations.md §5 "Ending calls by role"; `judge` appears only in stream.md §4.21's list of
# tool-calling endings (speculative execution) and binds no operation. `none` is an on-use
# script's kind: it may end on nothing.
ENDINGS = MappingProxyType({
    "standard": EndingSet("standard", "root, subagent, issue implementer, merge agent",
                          ("finish",), ("session.finish",)),
    "review": EndingSet("review", "issue reviewers",
                        ("approve", "request_changes"), ("session.approve", "session.request_changes")),
    "judge": EndingSet("judge", "speculative-execution judge (tool calling only, older gg)",
                       ("select_winner",), ()),
    "none": EndingSet("none", "an on-use script", (), ()),
})


@dataclass(frozen=True)
class CapabilityInfo:
    id: str
    description: str
    params: Any = field(default_factory=dict)  # param name -> default (None: no default, must be written)
    implementations: tuple = ()  # the arms an implementation param may name; first is the default

    @property
    def operations(self):
        return tuple(op.id for op in OPERATIONS
                     if op.binding.kind == "capability" and op.binding.capability == self.id)

    @property
    def tools(self):
        return tuple(t.name for t in TOOLS if t.capability == self.id)


# GG_CAPABILITY_CATALOG order (operations.md §1.3); params and defaults from console.md §3.3.
# Memory caps: 0 = unlimited (gg's defaults differ per strategy and are marked evolving).
CAPABILITIES = MappingProxyType({c.id: c for c in (
    CapabilityInfo("shell", "Run shell commands.", {"maxLines": 250, "maxChars": 4096}, ("", "offload", "inline")),
    CapabilityInfo("read-file", "Read files, and open them as views.", {"lineCap": 250},
                   ("unlimited", "hard-cap", "default-cap")),
    CapabilityInfo("write-file", "Write whole files."),
    CapabilityInfo("edit-file", "Replace a string in a file."),
    CapabilityInfo("list-dir", "List a directory and walk the tree."),
    CapabilityInfo("search", "Search file contents by regular expression."),
    CapabilityInfo("context-window-override", "Narrow the model's context window.", {"windowLimit": None}),
    CapabilityInfo("autoload-specs", "Load the provided spec files into the opening context.", {},
                   ("", "locked")),
    CapabilityInfo("agent-persistence", "One running instance per profile; reopens its last file views."),
    CapabilityInfo("skills", "Read skills from the skill library.", {"dir": ".gg/skills", "ownership": "owned"}),
    CapabilityInfo("memories", "Durable notes that survive compaction.",
                   {"scope": "isolated", "maxCount": 0, "maxLenPerMemory": 0, "maxTotalLen": 0,
                    "maxLenIndex": 0, "maxLenDescription": 0, "maxResults": 0},
                   ("scratchpad", "markdown", "keyword-search")),
    CapabilityInfo("tasks", "A task list the agent keeps for itself.", {"mode": "simple", "maxTasks": 100}),
    CapabilityInfo("compaction", "Compact the context window.", {"summaryHeadroom": 0.2},
                   ("self-summarization", "self-compaction", "handoff-summarization", "handoff-compaction",
                    "memory-compaction")),
    CapabilityInfo("agent-managed-context", "Evict views, archive and search the thread.", {"ownership": "owned"}),
    CapabilityInfo("project-management", "The run's epic and issue board.",
                   {"mergeAgent": None, "maxEpics": 50, "maxIssues": 2000, "maxRetries": 1, "reviewers": False,
                    "ownership": "owned"}),
    CapabilityInfo("subagents", "Spawn, message and wait for child agents.", {"maxDepth": None}),
    CapabilityInfo("fsm", "A machine shell: no model, runs a state machine of profiles.", {"states": []}),
    CapabilityInfo("exec", "Hand this session on to another agent."),
    CapabilityInfo("fork", "Fork a copy of this agent."),
    CapabilityInfo("responses-as-code", "Answer each turn with a program (the mode itself).",
                   {"language": "typescript", "timeoutSecs": 30, "maxMemoryBytes": 268435456,
                    "docViewTypes": "return+errors"}),
    CapabilityInfo("program-library", "Fetch and rerun programs that already ran."),
    CapabilityInfo("docview-close", "Close documentation views."),
)})
