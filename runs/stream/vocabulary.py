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

# gg's turn error types and the base kind each rolls up into. Each type is prefixed with its base
# kind's noun (GgTurnErrorType, "Names carry their base"). Two sources, both kept so a recorded run of
# either era ranks every type under its base:
# * GgTurnErrorType in telemetry-event.schema.json@ff51299a (../shared/fixtures/gg/; spec/stream.md §6):
#   21 types under five kinds;
# * the turn-outcomes doc of an earlier era (apps/docs/src/content/docs/gg/telemetry/turn-outcomes.md
#   @0037cb53): a sixth kind, `toolchain` (`toolchain_failed`: the language's compiler crashed, timed
#   out or is missing), and `transpile_semantic`, `transpile_lowering`, `program_tool_error` (the
#   uncaught failed call the newer schema calls `program_api_error`).
# A type in neither still ranks, under no kind ("unknown"), by its raw name.
TURN_ERROR_NOUNS = {"model": "model_api", "transpile": "transpile", "program": "program_fault",
                    "sandbox": "sandbox_limit", "toolchain": "toolchain", "missing_completion": "missing_completion"}
TURN_ERROR_TYPES = {
    t: next(k for noun, k in TURN_ERROR_NOUNS.items() if t.startswith(noun + "_"))
    for t in """model_auth model_rejected model_retry_exhausted model_response_loop model_vision_unsupported
    model_parse model_provider_mismatch model_timeout model_length_capped transpile_syntax transpile_compile
    transpile_unsupported program_api_error program_unknown_name program_throw sandbox_timeout
    sandbox_out_of_memory sandbox_trap missing_completion_no_call missing_completion_compaction
    missing_completion_no_program
    transpile_semantic transpile_lowering program_tool_error toolchain_failed""".split()
}
# The labels gg's console shows (GG_TURN_ERROR_TYPE_LABELS, generated from gg's Rust taxonomy into its
# TypeScript contract). The generated table is in no source we could read (the stored
# packages/run-record/src/gg.ts predates it; crates/core/src/gg.rs is not stored whole; the schema
# carries descriptions, not labels); these four are the ones gg's own tests pin
# (packages/ui/src/app/pages/runs/gg/ggErrors.test.ts@d2b353f8), and `program_tool_error` is the same
# type under its earlier id (turn-outcomes.md@0037cb53: "an uncaught failed call"). Every other type
# reads as gg reads a type it has no label for: the id, underscores spaced.
TURN_ERROR_TYPE_LABELS = {
    "program_api_error": "uncaught call failure",
    "program_tool_error": "uncaught call failure",
    "transpile_syntax": "syntax error",
    "transpile_compile": "compiler rejected the program",
    "sandbox_timeout": "execution timeout",
}
