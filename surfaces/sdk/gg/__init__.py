"""gg's Python SDK: `import gg`, then gg.files.read_file(...), one typed function per operation.

Every module is made here from the WIT bindings (surfaces/sdk/gg/_sdk.py), so the SDK covers
exactly what the membrane declares. Every function is callable whatever the run granted; a call
this agent was not granted is refused by the host with ApiError(code="unavailable").
"""

import sys
import types

from wit_world.imports import (board, context, delegation, docs, files, memories, programs, session, shell, skills,
                               tasks, views)

from gg import core
from gg._sdk import bind, receiver
from gg.core import ApiError, Value

# Presentation order, each with the one line the prompt introduces it by.
MODULES = (
    ("files", files, "Read, write, edit, list, walk and search the files of the workspace."),
    ("shell", shell, "Run shell commands in the workspace."),
    ("board", board, "The epic and issue board, shared by every agent in the run."),
    ("tasks", tasks, "The task list: a directed acyclic graph of work this agent is tracking for itself."),
    ("memories", memories, "Durable notes that survive a compaction of the context window."),
    ("docs", docs, "Find a module, function or type by searching, and take a documentation view back out of the window."),
    ("views", views, "Show a file, a value, or an entry's documentation in the context window."),
    ("context", context, "Manage the agent's own context window."),
    ("delegation", delegation, "Hand scoped work to child agents, and hand this session on to another agent."),
    ("skills", skills, "Read the skills this agent was given."),
    ("programs", programs, "Fetch a program that already ran, and hand a patched copy back to be run in its place."),
    ("session", session, "End the session."),
)
MODULE_NAMES = tuple(f"gg.{name}" for name, _, _ in MODULES) + ("gg.core",)

for _name, _bindings, _brief in MODULES:
    _module = types.ModuleType(f"gg.{_name}", _brief)
    _module.__dict__.update(bind(_name, _bindings))
    sys.modules[_module.__name__] = _module
    globals()[_name] = _module

_open_text = views.open_text


def _text_body(label, body):
    """views.open_text takes any value: a non-string body is shown as JSON, ApiError and records whole."""
    return _open_text(label, body if isinstance(body, str) else core.dumps(body, indent=2))


_text_body.__doc__ = _open_text.__doc__
_text_body.__signature__ = _open_text.__signature__
_text_body.__ggop__ = _open_text.__ggop__
views.open_text = _text_body


# The receiver methods: each is an alias of an operation, recorded under that operation.
@receiver("IssueCreated")
class IssueCreated(Value):
    def wait(self):
        """Alias of gg.board.wait_for_issue(self.id)."""
        return board.wait_for_issue(self.id)


@receiver("MemoryHit")
class MemoryHit(Value):
    def read(self):
        """Alias of gg.memories.read_memory(self.name)."""
        return memories.read_memory(self.name)


@receiver("SubagentHandle")
class SubagentHandle(Value):
    def send(self, message):
        """Alias of gg.delegation.send_message(self.id, message)."""
        return delegation.send_message(self.id, message)


@receiver("ProgramSummary")
class ProgramSummary(Value):
    def source(self):
        """Alias of gg.programs.get(self.id)."""
        return programs.get(self.id)


board.IssueCreated = IssueCreated
memories.MemoryHit = MemoryHit
delegation.SubagentHandle = SubagentHandle
programs.ProgramSummary = ProgramSummary

__all__ = [name for name, _, _ in MODULES] + ["core", "ApiError"]
