"""The one failure of a tool call, in both execution modes: `ToolError(code, message)`, whose code is
a gg failure class (stream.md §6 `GgCallFailure`)."""

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
