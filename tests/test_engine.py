"""The built-in engine: opening order, turns, scopes, successions, ceilings and cancel — each run
through the real ingest path, every emitted record validated against gg's telemetry schema."""

import pytest

from tests.engine_helpers import of_type, run_spec, schema_errors

pytestmark = pytest.mark.django_db

MEM = {"id": "memories", "enabled": True, "implementation": "scratchpad", "params": {"scope": "isolated"}}
FILES = [{"id": "read-file", "enabled": True}, {"id": "write-file", "enabled": True}]


def spec(agents, script, **extra):
    data = {"task": "Do the thing.", "agents": agents, "provider": {"kind": "scripted", "script": script}}
    data.update(extra)
    return data


def tool_agent(slug, caps=(), **fields):
    return {"slug": slug, "name": slug.title(), "executionMode": "tool_calling", "capabilities": list(caps), **fields}


def call(tool, **args):
    return {"toolCalls": [{"name": tool, "args": args}]}


def opening_types(records, agent_id):
    """The types of an incarnation's opening, from its agent_spawned to its first turn_started."""
    stream = [r for r in records if r.get("agentId") == agent_id]
    types = [r["type"] for r in stream]
    start = types.index("agent_spawned")
    end = types.index("turn_started") if "turn_started" in types else len(types)
    return types[start:end]


def test_a_tool_calling_root_writes_reads_and_finishes(tmp_path):
    data = spec([tool_agent("coder", FILES + [MEM])],
                {"coder": [call("write_file", path="a.txt", contents="hi"),
                           {"text": "reading", **call("read_file", path="a.txt")},
                           call("write_memory", name="n", body="remember"),
                           call("finish", summary="wrote a.txt")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == []
    assert run.status == "completed"
    assert records[0]["type"] == "session_started" and records[0]["capabilitySet"]["agents"][0]["slug"] == "coder"
    assert [r["type"] for r in records[-2:]] == ["session_summary", "session_ended"]
    assert opening_types(records, "root") == ["agent_spawned", "agent_modules", "agent_surface", "memory_state"]
    modules = of_type(records, "agent_modules")[0]["modules"]
    assert [m["kind"] for m in modules] == ["history", "memories", "tasks", "board", "skills", "archive"]
    assert modules[1] == {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created",
                          "writable": True, "scope": "isolated"}
    assert modules[2]["enabled"] is False and modules[2]["moduleId"] == ""
    surface = of_type(records, "agent_surface")[0]
    assert surface["tools"] == ["read_file", "write_file", "write_memory", "update_memory", "delete_memory", "finish"]
    assert "apis" not in surface
    turn = [r["type"] for r in records if r.get("agentId") == "root"]
    first = turn[turn.index("turn_started"):turn.index("turn_timing") + 1]
    assert first[:2] == ["turn_started", "context_breakdown"]
    assert first[-2:] == ["turn_outcome", "turn_timing"]
    assert first.index("prompt") < first.index("usage") < first.index("tool_call") < first.index("tool_result")
    breakdown = of_type(records, "context_breakdown")[0]
    assert [b["source"] for b in breakdown["bySource"]][:4] == ["system", "user_prompt", "assistant", "tool_output"]
    outcomes = of_type(records, "turn_outcome")
    assert [o["outcome"] for o in outcomes] == ["progressed"] * 3 + ["finished"]
    assert (tmp_path / "ws" / "a.txt").read_text() == "hi"
    assert of_type(records, "memory_revision")[0]["name"] == "n"
    assert of_type(records, "memory_state")[-1]["count"] == 1
    assert of_type(records, "session_ended")[0]["status"] == "completed"
