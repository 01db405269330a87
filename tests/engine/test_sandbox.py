"""The guest: build and cache, containment (deadline, memory, no filesystem/network/env/clock),
and what the model is told. Every program runs through the real guest."""

from pathlib import Path

import pytest
from django.conf import settings

from runs.engine.sandbox import guest as sandbox
from runs.engine.sandbox.program import run_program
from runs.engine.sandbox.guest import artifact_path
from tests.sandbox_run import context, run

pytestmark = pytest.mark.usefixtures("guest")


def test_the_compiled_guest_is_cached_under_var_and_a_later_start_only_deserializes_it(tmp_path, monkeypatch):
    path = artifact_path()
    assert path.parent == Path(settings.VAR_DIR) / "sandbox" and path.exists()
    stamp = path.stat().st_mtime_ns

    def no_build(*args, **kwargs):
        raise AssertionError("a current artifact must not be rebuilt")

    monkeypatch.setattr(sandbox.subprocess, "run", no_build)  # componentize-py is never started
    assert sandbox.build_guest() == path and path.stat().st_mtime_ns == stamp
    fresh = sandbox.Sandbox(sandbox.Component.deserialize(sandbox.ENGINE, path.read_bytes()))
    result = run_program(context(tmp_path)[0], "import gg\ngg.views.open_text('a', 'c')", sandbox=fresh)
    assert result.ok and result.views[0].body == "c"


def test_a_program_reads_a_file_through_the_membrane(tmp_path):
    ctx = context(tmp_path, capabilities=["read-file"])
    (ctx[0].workspace.root / "notes.txt").write_text("one\ntwo\n")
    result = run(ctx, """
        import gg
        read = gg.files.read_file("notes.txt", limit=1)
        assert read.kind == "text" and read.contents == "one\\n" and read.total_lines == 2, read
        gg.views.open_text("first line", read.contents)
    """)
    assert result.outcome.ok, result.outcome.error
    assert [(r["type"], r["operation"]) for r in result.records if r["type"].startswith("api_")] == [
        ("api_call", "files.read_file"), ("api_result", "files.read_file"),
        ("api_call", "views.open_text"), ("api_result", "views.open_text")]
    assert result.outcome.model_messages == []  # a clean program that opened views gets nothing else
    assert [v.heading for v in result.outcome.views] == ["View: first line"]


@pytest.mark.parametrize("source, expected", [
    ("while True:\n    pass\n", "wall-clock limit"),
    ("import time\ntime.sleep(0)\n", "PermissionError"),
    ("open('/etc/passwd').read()\n", "PermissionError"),
    ("import socket\n", "ImportError"),
    ("import os\nassert os.environ == {}, dict(os.environ)\nos.listdir('/')\n", "PermissionError"),
    ("def f(n):\n    return f(n + 1)\nf(0)\n", "RecursionError"),
    ("x = bytearray(4 << 30)\n", "Error"),
    ("x = [bytearray(1 << 20) for _ in range(400)]\n", "MemoryError"),
    ("import datetime\ndatetime.datetime.now()\n", "stopped by the sandbox"),
])
def test_hostile_programs_end_as_a_runtime_error_or_a_sandbox_limit(tmp_path, source, expected):
    result = run(context(tmp_path, timeout_secs=1.5, max_memory_bytes=128 * 1024 * 1024), source)
    assert not result.outcome.ok
    assert result.outcome.model_messages[-1][0] == "Runtime error"
    assert expected in result.outcome.error
    # the host process is unharmed: the next program runs
    assert run(context(tmp_path), "import gg\ngg.views.open_text('after', 'fine')").outcome.ok


def test_the_deadline_reports_sandbox_timeout(tmp_path):
    result = run(context(tmp_path, timeout_secs=0.5), "while True: pass")
    assert result.outcome.error_type == "sandbox_timeout"
    assert result.of("code_execution")[0]["ok"] is False
    assert any("did not run to a result" in line for line in result.logs("warn"))


def test_a_syntax_error_is_a_compiler_error_with_the_diagnostic_verbatim(tmp_path):
    result = run(context(tmp_path), "import gg\nx = (1,\n")
    heading, body = result.outcome.model_messages[-1]
    assert heading == "Compiler error"
    assert "SyntaxError" in body and '"<program>", line 2' in body
    assert result.outcome.error_type == "transpile_syntax"


def test_a_runtime_error_is_trimmed_to_the_programs_own_frames(tmp_path):
    result = run(context(tmp_path, capabilities=["read-file"]), """
        import gg

        def helper():
            return gg.files.read_file("missing.txt")

        helper()
    """)
    heading, body = result.outcome.model_messages[-1]
    assert heading == "Runtime error"
    assert 'File "<program>", line 7, in <module>' in body and 'File "<program>", line 5, in helper' in body
    assert "_sdk.py" not in body and "gg_guest" not in body
    assert body.endswith("gg.core.ApiError: `read_file` failed (not-found): missing.txt does not exist")
    assert result.outcome.error_type == "program_api_error"


def test_print_goes_to_the_operator_only_and_a_program_that_showed_nothing_gets_the_notice(tmp_path):
    result = run(context(tmp_path), "print('hello')\nprint('world')")
    assert result.of("code_execution")[0]["logs"] == ["hello", "world"]
    assert result.outcome.model_messages == [("Notice", result.outcome.model_messages[0][1])]
    assert result.outcome.model_messages[0][1].startswith("Your program ran and put nothing in your context.")


def test_logs_keep_the_tail_within_the_caps(tmp_path):
    result = run(context(tmp_path), "for i in range(300):\n    print(i)\nprint('x' * 5000)")
    record = result.of("code_execution")[0]
    assert len(record["logs"]) == 200 and record["logs"][0] == "101"
    assert len(record["logs"][-1].encode()) <= 2 * 1024 + 3
    assert record["logsSuppressed"] == 101
