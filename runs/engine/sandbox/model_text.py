"""What the model is told (seeds/004): three headings — Compiler error, Runtime error, Notice.

Error bodies carry the error and nothing else; gg only ever removes from them (the guest cuts a
trace to the program's own frames). Notices are facts about the session, pushed before the error.
"""

from surfaces.arms import arm
from surfaces.catalogue import MODULES_BY_ID

HEADINGS = ("Compiler error", "Runtime error", "Notice")

OUTPUT_CALLS = {"python": "print", "typescript": "console.log"}  # what a program writes logs with, per arm
TOOLCHAINS = {"python": "the Python sandbox could not be started", "typescript": "the TypeScript compiler could not finish"}


def nothing_in_context(language):
    """The one notice a working program can earn, rendered under the agent's own language."""
    return ("Your program ran and put nothing in your context.\n\n"
            "A view is the only way to see anything — a value you computed, or a file.\n"
            f"Nothing `{OUTPUT_CALLS.get(language, 'print')}` writes is readable by you.")


def toolchain_failed(language):
    """A toolchain that crashed or could not start: nothing read the program, so nothing rejected it."""
    return (f"Your program was not run: {TOOLCHAINS.get(language, TOOLCHAINS['python'])}. Nothing about the program "
            "was rejected; write it again.")

RERUN_NOTICES = {
    "failed": "The program handed one to `gg.programs.rerun` and then failed, so the replacement was not run.",
    "ended": "The program both ended the session and handed one to `gg.programs.rerun`; the ending stands and the "
             "replacement was not run.",
    "ceiling": "The turn already ran as many programs as it may, so the last `gg.programs.rerun` was not run.",
}

# gg's operator log wording for the same three (stream.md §5).
RERUN_LOG = {
    "failed": "the program handed one to `programs.rerun` and then failed, so the replacement was NOT run.",
    "ended": "the program both ended the session and handed one to `programs.rerun`; the ending stands and the "
             "replacement was not run.",
    "ceiling": "the turn reached its ceiling of {n} programs; the last `programs.rerun` was not run.",
}


def code_prompt(language, grants):
    """The system prompt's part for a code agent: its module list, in its arm's spelling (a module is
    named where this agent binds a function in it), and the standing rules, stated once."""
    the_arm = arm(language)
    modules = [m for m in grants.modules()] + [MODULES_BY_ID["core"]]
    lines = [f"Your programs are {the_arm.label}; they reach gg through `{the_arm.import_line()}`. gg's modules:"]
    lines += [f"- {the_arm.module_path(m.id)}: {m.brief}" for m in modules]
    lines += ["", "A program that throws does not end the session, and whatever it did before the throw stands. "
              "An ending call declared before a throw is revoked. A view is the only way out of a program: "
              f"nothing `{OUTPUT_CALLS.get(language, 'print')}` writes is readable by you, and a program that ran "
              "is not told so."]
    return "\n".join(lines)


def render(heading, body):
    """One user message: the heading, then the body."""
    assert heading in HEADINGS or heading.startswith(("View: ", "Documentation: ", "File: "))
    return f"{heading}\n\n{body}"


def receipt(program_id=None):
    """The submit_program tool result: the library's id for the program, or the fixed ok."""
    return program_id if program_id else "ok"


def rerun_not_run(reason):
    return RERUN_NOTICES[reason]


def module_failed(key, name, message):
    return (f"The code of `{name}` failed to load, so nothing is loaded under lib.{key}: {message}")


def sandbox_stopped(kind, detail, timeout_secs, max_memory_bytes):
    """The Runtime error body when the sandbox, not the program, stopped it."""
    if kind == "timeout":
        return f"The program was stopped: it ran past its wall-clock limit of {timeout_secs:g} s."
    if kind == "out-of-memory":
        return f"The program was stopped: it reached its memory limit of {max_memory_bytes // (1024 * 1024)} MiB."
    cause = detail.strip().rsplit("\n", 1)[-1].strip()
    return f"The program was stopped by the sandbox ({cause}): it has no filesystem, network, environment or clock."
