"""gg's typed tool implementations over a workspace, shared by both execution modes.

A responses-as-code program reaches them through the membrane (runs.engine.sandbox.membrane); a
tool-calling agent reaches them by tool name from the run loop. Every failure is one
`ToolError(code, message)` whose code is a gg failure class (stream.md §6 `GgCallFailure`).
"""

FAILURE_CLASSES = ("invalid-argument", "not-found", "conflict", "refused", "unavailable", "limit-exceeded",
                   "io-error", "other")


class ToolError(Exception):
    """A failed call: `code` is the failure class, `message` what the caller is told."""

    def __init__(self, code, message):
        if code not in FAILURE_CLASSES:
            raise ValueError(f"unknown failure class {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message


def estimate_tokens(text):
    """A rough token estimate (about four characters a token), never zero for non-empty text."""
    return (len(text) + 3) // 4


from runs.engine.tools.workspace import Workspace  # noqa: E402
from runs.engine.tools.module_stores import ArchiveStore, BoardStore, MemoryStore, TaskStore  # noqa: E402
from runs.engine.tools.skills import SkillLibrary  # noqa: E402
from runs.engine.tools.context_views import View, Window  # noqa: E402

__all__ = ["ToolError", "FAILURE_CLASSES", "estimate_tokens", "Workspace", "MemoryStore", "TaskStore", "BoardStore",
           "SkillLibrary", "ArchiveStore", "View", "Window"]
