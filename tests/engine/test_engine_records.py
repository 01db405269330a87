"""The engine's records fit its own write path: no record over the 1 MiB line, so none is stored as a
rejected line — model- and operator-sized text is bounded where the model or operator can be told.
Each run goes through the real ingest path; every stored record is validated against gg's schema."""

import pytest

from runs.engine.validation import validate_spec
from tests.engine_helpers import call, code_agent, of_type, program, run_spec, schema_errors, spec, tool_agent

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
