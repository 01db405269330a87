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
# A memory's body is recorded whole in each of its revisions (`memory_revision`), and a record over the write
# path's 1 MiB line is refused: a 3 MiB body left a store whose peak counted a memory no revision recorded.
MAX_MEMORY_BODY_BYTES = 256 * 1024
MAX_MEMORY_DESCRIPTION_BYTES = 4 * 1024  # every description is in each `memory_state`


def bounded(text: str, what: str, limit: int = MAX_HANDED_ON_BYTES) -> str:
    """`text`, or `limit-exceeded` naming `what` and the bound."""
    size = len(text.encode(errors="replace"))
    if size > limit:
        raise ToolError("limit-exceeded", f"{what} is at most {limit // 1024} KiB ({size:,} bytes given)")
    return text
