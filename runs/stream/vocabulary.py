"""gg's record types and the words the fold keys on (spec/stream.md)."""

GG_TYPES = frozenset(
    """session_started session_summary session_ended log turn_started assistant_message prompt
    context_message context_breakdown turn_timing turn_outcome usage response_rejected tool_call
    tool_result api_call api_result shell code_execution agent_spawned agent_modules agent_surface
    agent_status agent_returned agent_transition fsm_state slot_usage limit_exceeded skills_state
    memory_state memory_revision tasks_state board_state archive_state compaction context_managed
    issue_review worktree_merged provider_fault provider_switch""".split()
)
assert len(GG_TYPES) == 40

# The host wrapper's kinds (HarnessEvent, spec/stream.md §1.1). "gg" carries a gg record in
# `event`; the others are the host's own rows (stored, never projected). "usage" is also a gg type:
# a record typed "usage" is gg's when it carries a `tokens` object, the host's otherwise.
HOST_KINDS = frozenset(
    "agent reasoning command read write search list skill orchestration error warning system usage "
    "unknown".split()
)

STATE_KINDS = {
    "memory_state": "memories",
    "tasks_state": "tasks",
    "board_state": "board",
    "skills_state": "skills",
    "archive_state": "archive",
}
MODULE_KINDS = ("history", "memories", "tasks", "board", "skills", "archive")

# session_ended statuses that mark still-running agents failed (spec/stream.md §4.2).
FAILED_SESSION_STATUSES = frozenset(
    {"model_error", "auth_error", "hook_error", "compaction_failed", "internal_error"}
)
OPEN_AGENT_STATUSES = ("running", "blocked")

UNCLASSIFIED = "unclassified"  # a failed result that named no failure class

REVIEW_ENDINGS = frozenset({"approve", "request_changes"})
REVIEW_OPERATIONS = frozenset({"session.approve", "session.request_changes"})
JUDGE_ENDINGS = frozenset({"select_winner"})

# Column widths (Event / Agent CharFields): values are cut to fit, never rejected.
TYPE_MAX = 64
ID_MAX = 200
SHORT_MAX = 64
DEPTH_COLUMN_MAX = 2**31 - 1  # Agent.depth's column; a deeper figure is not a depth
