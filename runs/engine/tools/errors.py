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


# What an agent hands on in words (a finish summary, the changes it asks for, a compaction's summary)
# goes into the stream, its parent's context and the next prompt: a program's 10 MB summary was a
# record no stream takes (over 1 MiB) and five million tokens of prompt.
MAX_HANDED_ON_BYTES = 64 * 1024


def bounded(text: str, what: str) -> str:
    """`text`, or `limit-exceeded` naming `what` and the bound."""
    size = len(text.encode(errors="replace"))
    if size > MAX_HANDED_ON_BYTES:
        raise ToolError("limit-exceeded", f"{what} is at most {MAX_HANDED_ON_BYTES // 1024} KiB "
                                          f"({size:,} bytes given)")
    return text
