"""The engine's records on their way to the database: none over the write path's 1 MiB line, so none
is stored as a rejected line — model- and operator-sized text is bounded where the model or operator
can be told — and each stored while its turn still runs. Each run goes through the real ingest path;
every stored record is validated against gg's schema."""

import threading
import time

import pytest
from django.db import connection

from runs.engine.runner import start_run
from runs.engine.validation import validate_spec
from runs.models import Run
from tests.engine_helpers import call, code_agent, of_type, program, run_spec, schema_errors, spec, tool_agent
from tests.launch_helpers import retry_locked

pytestmark = pytest.mark.django_db

MEM = {"id": "memories", "enabled": True, "implementation": "scratchpad", "params": {"scope": "isolated"}}
MEMORY_OPS = ["memories.write_memory", "session.finish"]


def test_a_memory_body_over_the_bound_is_refused_to_the_model_in_both_modes(tmp_path, guest):
    """A 3 MiB body made a memory_revision the write path refused (a rejected line) while the store's
    peak counted the memory: now the write fails limit-exceeded, and the store holds nothing."""
    huge = "'q' * (3 * 1024 * 1024)"
    data = spec([code_agent("coder", [MEM], MEMORY_OPS)],
                {"coder": [program(f"r = gg.memories.write_memory(name='m', description='d', body={huge})\n"
                                   "gg.session.finish('done')")]})
    run, records = run_spec(data, tmp_path / "code")
    assert run.rejected_lines.count() == 0 and schema_errors(records) == []
    result = next(r for r in of_type(records, "api_result") if r["operation"] == "memories.write_memory")
    assert result["ok"] is False and result["failure"] == "limit-exceeded"
    assert of_type(records, "memory_revision") == [] and of_type(records, "memory_state")[-1]["peak"]["count"] == 0

    data = spec([tool_agent("coder", [MEM])], {"coder": [call("write_memory", name="m", body="q" * 3 * 1024 * 1024),
                                                         call("finish", summary="done")]})
    run, records = run_spec(data, tmp_path / "tools", name="tools")
    assert run.rejected_lines.count() == 0  # its tool_call (args.body) is stored shortened
    result = of_type(records, "tool_result")[0]
    assert result["ok"] is False and result["failure"] == "limit-exceeded"
    assert result["summary"] == "a memory's body is at most 256 KiB (3,145,728 bytes given)"
    assert of_type(records, "memory_revision") == []


def test_a_task_over_the_bound_is_refused_at_launch():
    """A 5 MiB task launched, and its context_message was lost as a rejected line."""
    data = spec([tool_agent("coder")], {"coder": [call("finish", summary="done")]}, task="t" * (5 * 1024 * 1024))
    refusal = {"path": "task", "message": "the task is at most 256 KiB (5,242,880 bytes given)"}
    assert validate_spec(data)[1] == [refusal]
    assert validate_spec({**data, "task": "t" * (256 * 1024)})[1] == []


def test_a_record_over_the_line_is_stored_shortened_and_says_so(tmp_path):
    """A reply's 2 MB write_file made a tool_call (and the reply's context_message) over 1 MiB: both
    were rejected lines. Now each is stored with its longest string shortened, and a warn log names it;
    the file itself is written whole."""
    contents = "c" * 2_000_000
    data = spec([tool_agent("coder", [{"id": "write-file", "enabled": True}])],
                {"coder": [call("write_file", path="big.txt", contents=contents), call("finish", summary="done")]})
    run, records = run_spec(data, tmp_path)
    assert run.rejected_lines.count() == 0 and schema_errors(records) == [] and run.status == "completed"
    assert (tmp_path / "ws" / "big.txt").read_text() == contents
    recorded = of_type(records, "tool_call")[0]["args"]["contents"]
    assert recorded.startswith("c" * 100_000) and recorded.endswith(" characters not recorded]")
    assert 1_000_000 < len(recorded) < 1_048_576
    message = next(m for m in of_type(records, "context_message") if m["role"] == "assistant")
    assert message["toolCalls"][0]["args"]["contents"].endswith(" characters not recorded]")
    warnings = [r["message"] for r in of_type(records, "log") if r["level"] == "warn"]
    assert any(w.startswith("the tool_call record was over the write path's 1 MiB line; shortened: args.contents "
                            "from 2,000,000 to ") for w in warnings), warnings
    assert any("the context_message record was over" in w and "toolCalls[0].args.contents" in w for w in warnings)


def test_a_record_no_cut_string_brings_within_the_line_is_said_to_be_left_out(tmp_path):
    """Six hundred thousand short strings: nothing to shorten; an error log says so, no rejected line."""
    args = {"path": "a.txt", "contents": "x", "also": ["ab"] * 600_000}
    data = spec([tool_agent("coder", [{"id": "write-file", "enabled": True}])],
                {"coder": [{"toolCalls": [{"name": "write_file", "args": args}]}, call("finish", summary="done")]})
    run, records = run_spec(data, tmp_path)
    assert run.rejected_lines.count() == 0 and schema_errors(records) == [] and run.status == "completed"
    assert [c["name"] for c in of_type(records, "tool_call")] == ["finish"]  # the write_file call left out
    assert of_type(records, "tool_result")[0]["ok"] is True
    errors = [r["message"] for r in of_type(records, "log") if r["level"] == "error"]
    assert "a tool_call record was over the write path's 1 MiB line however its strings were cut; it was not " \
           "recorded" in errors


def _start(pk, workspace):
    try:
        start_run(Run.objects.get(pk=pk), workspace=workspace)
    finally:
        connection.close()  # as a worker's thread does


def while_running(data, tmp_path, status, end):
    """Run `data` on a thread as a worker does; [(turns, record types)] as read from the database every
    0.1 s until the record type `end` is stored."""
    run = Run.objects.create(name="live", source=Run.Source.ENGINE, status=Run.Status.QUEUED, launch_spec=data)
    worker = threading.Thread(target=_start, args=(run.pk, tmp_path / "ws"))
    worker.start()
    seen = []
    while worker.is_alive():
        types = set(retry_locked(lambda: list(run.events.values_list("type", flat=True))))
        if end not in types:
            retry_locked(run.refresh_from_db)
            seen.append((run.turn_count, types))
        time.sleep(0.1)
    worker.join()
    assert retry_locked(lambda: Run.objects.get(pk=run.pk).status) == status
    assert len(seen) > 10  # it ran for seconds
    return seen


@pytest.mark.django_db(transaction=True)
def test_a_turn_is_stored_while_its_program_runs(tmp_path, guest):
    """A program computing for its whole 3 s budget: its turn's records (stamped at its start) reached
    the database only when it ended; meanwhile the run read "0 turns, 6 records"."""
    budget = {"id": "responses-as-code", "enabled": True, "params": {"timeoutSecs": 3}}
    data = spec([code_agent("coder", [budget], ["session.finish"])], {"coder": [program("while True:\n    pass")]},
                limits={"maxTurns": 1})
    seen = while_running(data, tmp_path, "exhausted", "code_execution")
    assert any(turns == 1 and {"turn_started", "context_message", "prompt", "usage"} <= types
               for turns, types in seen), seen[-1]


@pytest.mark.django_db(transaction=True)
def test_a_tool_call_is_stored_while_its_shell_command_runs(tmp_path):
    data = spec([tool_agent("coder", [{"id": "shell", "enabled": True}])],
                {"coder": [call("shell", command="sleep 3"), call("finish", summary="done")]})
    seen = while_running(data, tmp_path, "completed", "tool_result")
    assert any({"prompt", "tool_call"} <= types for _, types in seen), seen[-1]


def test_a_killed_shell_command_leaves_a_warning_saying_why_in_both_modes(tmp_path, guest):
    """The `shell` record of a killed command said exitCode -1 and nothing more: why it was killed
    was in the model's output only."""
    shell = {"id": "shell", "enabled": True}
    code = spec([code_agent("coder", [shell], ["shell.shell", "session.finish"])],
                {"coder": [program("gg.shell.shell('sleep 5', 0.5)\ngg.session.finish('done')")]})
    tools = spec([tool_agent("coder", [shell])],
                 {"coder": [call("shell", command="sleep 5", timeout_secs=1), call("finish", summary="done")]})
    for data, name in ((code, "code"), (tools, "tools")):
        run, records = run_spec(data, tmp_path / name, name=name)
        assert schema_errors(records) == []
        shell_at = next(i for i, r in enumerate(records) if r["type"] == "shell")
        assert records[shell_at]["exitCode"] == -1
        assert {"type": "log", "level": "warn"}.items() <= records[shell_at + 1].items()
        assert records[shell_at + 1]["message"].startswith("the shell command was killed after ")
