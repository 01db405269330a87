"""Run one program of an agent through its arm's guest and the membrane.

    outcome = run_program(ctx, source)

The arm is ctx.language. A Python program goes to the Python guest as written (it compiles its
own source); a TypeScript program is first type-checked and stripped by the warm compiler
(runs/engine/sandbox/typescript.py), its diagnostics being the Compiler error, and the runtime's
locations are mapped back into the program's own coordinates. Never raises for the program's
faults: a compile error, a throw, a sandbox limit or a toolchain failure are all outcomes.
"""

import time

from runs.engine.sandbox import model_text as messages
from runs.engine.sandbox import typescript
from runs.engine.sandbox.compiler import ToolchainError
from runs.engine.sandbox.membrane import MAX_FAILURE_TEXT_BYTES, Membrane, ProgramOutcome, clip


class _AsWritten:
    """The Python arm's preparation: none (the guest compiles the program itself)."""

    def __init__(self, source, lib):
        self.program, self.modules = source, lib.guest_modules()

    def remap(self, text):
        return text

    def location(self, raw):
        return raw


def _prepare(ctx, source):
    if ctx.language == "typescript":
        return typescript.prepare(source, ctx.lib)
    return _AsWritten(source, ctx.lib)


def run_program(ctx, source, sandbox=None):
    # Imported here, not at the top: the guest loads wasmtime, which a tool-calling run never needs.
    from runs.engine.sandbox.guest import SandboxError, Trap, get_sandbox

    outcome = ProgramOutcome(ok=False)
    membrane = Membrane(ctx, outcome)
    started = time.monotonic()
    try:
        sandbox = sandbox or get_sandbox(ctx.language)
        prepared = _prepare(ctx, source)
        # The wall-clock budget is the program's: building the guest or compiling is not spent from it.
        started = time.monotonic()
        membrane.deadline = started + ctx.timeout_secs
        result = sandbox.run(membrane, prepared.program, prepared.modules, ctx.timeout_secs, ctx.max_memory_bytes)
    except typescript.CompileError as exc:
        membrane.finish(False, str(exc), "transpile_syntax")
        return outcome
    except ToolchainError as exc:
        # Nothing read the program: a Notice, not a Compiler error; the crash is the operator's.
        membrane.log("error", f"the {typescript.LABEL} compiler crashed or could not start; the program was not run: "
                              f"{clip(str(exc), 4 * MAX_FAILURE_TEXT_BYTES)}")
        return _not_run(ctx, outcome, "the program's compiler crashed or could not start", retry=True)
    except Trap as trap:
        outcome.duration_ms = int((time.monotonic() - started - membrane.blocked_seconds) * 1000)
        text = messages.sandbox_stopped(trap.kind, trap.detail, ctx.timeout_secs, ctx.max_memory_bytes)
        membrane.log("warn", f"the code program did not run to a result: {clip(trap.detail.strip(), MAX_FAILURE_TEXT_BYTES)}")
        membrane.finish(False, text, {"timeout": "sandbox_timeout", "out-of-memory": "sandbox_out_of_memory"}.get(
            trap.kind, "sandbox_trap"))
        return outcome
    except (SandboxError, OSError) as exc:
        membrane.log("error", f"the code sandbox could not be operated ({exc})")
        return _not_run(ctx, outcome, "the code sandbox could not be operated", retry=False)
    outcome.duration_ms = int((time.monotonic() - started - membrane.blocked_seconds) * 1000)
    error = result["error"]
    if result["ok"] or error is None:
        membrane.finish(True, None, None)
    elif _out_of_memory(error):
        membrane.finish(False, messages.sandbox_stopped("out-of-memory", error["message"], ctx.timeout_secs,
                                                        ctx.max_memory_bytes), "sandbox_out_of_memory")
    else:
        membrane.finish(False, prepared.remap(error["message"]), _error_type(error))
    return outcome


def _not_run(ctx, outcome, what, retry):
    outcome.model_messages = [("Notice", messages.toolchain_failed(ctx.language))]
    outcome.ok, outcome.error_type, outcome.retry = False, None, retry
    record = {"type": "code_execution", "ok": False, "toolCalls": 0, "durationMs": 0, "logs": [], "error": what}
    ctx.emit(record)
    outcome.code_execution = record
    return outcome


def _out_of_memory(error):
    # SpiderMonkey throws the bare string "out of memory" when an allocation passes the ceiling.
    return error["kind"] == "other" and error["message"].startswith("uncaught exception: out of memory")


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
