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
