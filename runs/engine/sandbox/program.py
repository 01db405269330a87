"""Running one program: the guest (runs.engine.sandbox.guest) executes it, every call it makes
crosses the membrane, and the outcome says what happened — never an exception for the program's
own faults."""

import time

from runs.engine.sandbox import model_text as messages
from runs.engine.sandbox.membrane import MAX_FAILURE_TEXT_BYTES, Membrane, ProgramOutcome, clip


def run_program(ctx, source, sandbox=None):
    """Run one program of `ctx`'s agent through the Python guest. Never raises for the program's
    faults: a compile error, a throw, a sandbox limit or a toolchain failure are all outcomes."""
    # Imported here, not at the top: the guest loads wasmtime, which a tool-calling run never needs.
    from runs.engine.sandbox.guest import SandboxError, Trap, get_sandbox

    outcome = ProgramOutcome(ok=False)
    membrane = Membrane(ctx, outcome)
    try:
        sandbox = sandbox or get_sandbox()
        # The wall-clock budget is the program's: building the guest on first use is not spent from it.
        started = time.monotonic()
        membrane.deadline = started + ctx.timeout_secs
        result = sandbox.run(membrane, source, ctx.lib.guest_modules(), ctx.timeout_secs, ctx.max_memory_bytes)
    except Trap as trap:
        outcome.duration_ms = int((time.monotonic() - started - membrane.blocked_seconds) * 1000)
        text = messages.sandbox_stopped(trap.kind, trap.detail, ctx.timeout_secs, ctx.max_memory_bytes)
        membrane.log("warn", f"the code program did not run to a result: {clip(trap.detail.strip(), MAX_FAILURE_TEXT_BYTES)}")
        membrane.finish(False, text, {"timeout": "sandbox_timeout", "out-of-memory": "sandbox_out_of_memory"}.get(
            trap.kind, "sandbox_trap"))
        return outcome
    except (SandboxError, OSError) as exc:
        membrane.log("error", f"the code sandbox could not be operated ({exc})")
        outcome.model_messages = [("Notice", messages.TOOLCHAIN_FAILED)]
        outcome.ok, outcome.error_type = False, None
        record = {"type": "code_execution", "ok": False, "toolCalls": 0, "durationMs": 0, "logs": [],
                  "error": "the code sandbox could not be operated"}
        ctx.emit(record)
        outcome.code_execution = record
        return outcome
    outcome.duration_ms = int((time.monotonic() - started - membrane.blocked_seconds) * 1000)
    error = result["error"]
    if result["ok"] or error is None:
        membrane.finish(True, None, None)
    else:
        membrane.finish(False, error["message"], _error_type(error))
    return outcome


def _error_type(error):
    kind = error["kind"]
    if kind == "compile-error":
        return "transpile_syntax"
    if kind == "unknown-name" or (kind == "api-failure" and error["code"] == "unavailable"):
        return "program_unknown_name"
    if kind == "api-failure":
        return "program_api_error"
    if error["message"].rstrip().rsplit("\n", 1)[-1].startswith("MemoryError"):
        return "sandbox_out_of_memory"
    return "program_throw"
