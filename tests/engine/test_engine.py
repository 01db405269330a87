"""The built-in engine: opening order, turns, scopes, successions, ceilings and cancel — each run
through the real ingest path, every emitted record validated against gg's telemetry schema."""

import json

import pytest

from runs.engine import delegation
from tests.engine_helpers import call, of_type, run_spec, schema_errors, spec, tool_agent

pytestmark = pytest.mark.django_db

MEM = {"id": "memories", "enabled": True, "implementation": "scratchpad", "params": {"scope": "isolated"}}
FILES = [{"id": "read-file", "enabled": True}, {"id": "write-file", "enabled": True}]


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


def _spawner(child_scope, parent_memories=True, parent_scope="isolated"):
    parent_caps = [{"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}]
    if parent_memories:
        parent_caps.append({"id": "memories", "enabled": True, "params": {"scope": parent_scope}})
    return spec(
        [tool_agent("lead", parent_caps,
                    subagents=[{"agent": "kid", "description": "", "scopes": ["subagent"]}]),
         tool_agent("kid", [{"id": "memories", "enabled": True, "params": {"scope": child_scope}}])],
        {"lead": [call("write_memory", name="a", body="x") if parent_memories else call("wait_for_subagents"),
                  call("spawn_subagent", agent="kid", prompt="go"), call("wait_for_subagents"),
                  call("finish", summary="done")],
         "kid": [call("finish", summary="ok")]})


@pytest.mark.parametrize("child_scope, parent_memories, parent_scope, expected", [
    ("isolated", True, "isolated", {"moduleId": "memories-1", "origin": "created", "writable": True}),
    ("shared", True, "shared", {"moduleId": "memories-0", "origin": "run", "writable": True}),
    ("inherited", True, "isolated", {"moduleId": "memories-0", "origin": "inherited", "writable": True}),
    ("read-only", True, "isolated", {"moduleId": "memories-0", "origin": "inherited", "writable": False}),
    ("inherited", False, None, {"moduleId": "memories-0", "origin": "created", "writable": True}),
])
def test_memories_scopes_resolve_as_gg_does(tmp_path, child_scope, parent_memories, parent_scope, expected):
    run, records = run_spec(_spawner(child_scope, parent_memories, parent_scope), tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    row = of_type(records, "agent_modules", "agent-0")[0]["modules"][1]
    assert {k: row[k] for k in expected} == expected and row["scope"] == child_scope
    assert opening_types(records, "agent-0") == ["agent_spawned", "agent_modules", "agent_surface", "memory_state",
                                                 "agent_status"]
    kid_tools = of_type(records, "agent_surface", "agent-0")[0]["tools"]
    assert ("write_memory" in kid_tools) == expected["writable"]
    state = of_type(records, "memory_state", "agent-0")[0]
    assert state["moduleId"] == expected["moduleId"] and state["writable"] == expected["writable"]
    if parent_memories and expected["moduleId"] == "memories-0":
        assert state["count"] == 1  # the spawner's note is in the store the child holds


def test_fsm_transition_carries_only_the_transfer_list(tmp_path):
    worker_caps = [{"id": "tasks", "enabled": True}, {"id": "memories", "enabled": True}]
    data = spec(
        [{"slug": "machine", "name": "Machine", "capabilities": [{"id": "fsm", "enabled": True, "params": {"states": [
            {"name": "draft", "agent": "writer", "transitions": [
                {"to": "check", "transfer": ["history", "tasks"], "description": "hand over"}]},
            {"name": "check", "agent": "checker", "transitions": []}]}}]},
         tool_agent("writer", worker_caps), tool_agent("checker", worker_caps)],
        {"writer": [call("add_task", id="t", title="T"), call("transition_state", to="check", prompt="check it")],
         "checker": [call("finish", summary="checked")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    assert opening_types(records, "root")[:3] == ["agent_spawned", "fsm_state", "agent_modules"]
    assert of_type(records, "fsm_state", "root")[0] == {**of_type(records, "fsm_state", "root")[0],
                                                        "fsmId": "machine", "state": "draft", "profileId": "writer"}
    assert "transition_state" in of_type(records, "agent_surface", "root")[0]["tools"]
    transition = of_type(records, "agent_transition", "root")[0]
    assert transition["kind"] == "fsm" and transition["state"] == "check" and transition["toAgentId"] == "agent-0"
    rows = {row["kind"]: row["disposition"] for row in transition["modules"]}
    assert rows == {"history": "carried", "memories": "initialized", "tasks": "carried", "board": "absent",
                    "skills": "absent", "archive": "absent"}
    entry = of_type(records, "fsm_state", "agent-0")[0]
    assert entry["from"] == "draft" and entry["state"] == "check" and entry["profileId"] == "checker"
    assert "transition_state" not in of_type(records, "agent_surface", "agent-0")[0]["tools"]
    types = [r["type"] for r in records]
    assert types.index("agent_transition") < types.index("agent_spawned", types.index("agent_transition"))


def test_a_reply_with_no_tool_call_is_an_error_turn(tmp_path):
    data = spec([tool_agent("coder")], {"coder": [{"text": "just prose"}, call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    first = of_type(records, "turn_outcome")[0]
    assert first["outcome"] == "error" and first["errorType"] == "missing_completion_no_call"
    assert first["consecutiveErrors"] == 1 and run.status == "completed"


def test_a_tool_not_offered_is_refused_with_unavailable(tmp_path):
    data = spec([tool_agent("coder", tools=[])],
                {"coder": [call("write_file", path="x", contents="y"), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    result = of_type(records, "tool_result")[0]
    assert result["ok"] is False and result["failure"] == "unavailable"
    assert of_type(records, "agent_surface")[0]["tools"] == ["finish"]


@pytest.mark.parametrize("scope, memories", [("isolated", "copied"), ("shared", "linked")])
def test_a_fork_copies_window_and_tasks_links_the_board_and_its_memories_follow_their_scope(
        tmp_path, scope, memories):
    caps = [{"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}, {"id": "fork", "enabled": True},
            {"id": "tasks", "enabled": True}, {"id": "memories", "enabled": True, "params": {"scope": scope}},
            {"id": "project-management", "enabled": True, "params": {"mergeAgent": "lead"}}]
    data = spec([tool_agent("lead", caps)],
                {"root": [call("add_task", id="t", title="T"), call("fork", prompt="try the other way"),
                          call("wait_for_subagents"), call("finish", summary="done")],
                 "agent-0": [call("finish", summary="tried")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    fork = of_type(records, "agent_transition", "root")[0]
    assert fork["kind"] == "fork" and fork["toAgentId"] == "agent-0" and fork["profileId"] == "lead"
    rows = {row["kind"]: row for row in fork["modules"]}
    assert [row["kind"] for row in fork["modules"]] == ["history", "memories", "tasks", "board", "skills", "archive"]
    assert rows["history"]["disposition"] == "copied"
    assert rows["history"]["fromModuleId"] != rows["history"]["toModuleId"]
    assert rows["tasks"] == {"kind": "tasks", "disposition": "copied", "fromModuleId": "tasks-0",
                             "toModuleId": "tasks-1"}
    assert rows["board"] == {"kind": "board", "disposition": "linked", "fromModuleId": "board-0",
                             "toModuleId": "board-0"}
    assert rows["memories"]["disposition"] == memories
    assert (rows["memories"]["fromModuleId"] == rows["memories"]["toModuleId"]) == (memories == "linked")
    # The copy opens under its fresh id with the lead's turn count and the copied task list.
    assert opening_types(records, "agent-0")[:3] == ["agent_spawned", "agent_modules", "agent_surface"]
    assert of_type(records, "agent_spawned", "agent-0")[0]["parentAgentId"] == "root"
    assert of_type(records, "tasks_state", "agent-0")[0]["tasks"][0]["id"] == "t"
    assert of_type(records, "turn_outcome", "agent-0")[0]["turns"] == 3


def test_exec_carries_what_both_hold_drops_what_the_successor_lacks_and_initializes_the_new(tmp_path):
    roster = [{"agent": "next", "description": "", "scopes": ["subagent"]}]
    data = spec([tool_agent("first", [{"id": "tasks", "enabled": True}, {"id": "exec", "enabled": True}],
                            subagents=roster),
                 tool_agent("next", [{"id": "memories", "enabled": True}])],
                {"first": [call("add_task", id="t", title="T"), call("exec", agent="next", prompt="carry on")],
                 "next": [call("finish", summary="done")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    exec_ = of_type(records, "agent_transition", "root")[0]
    assert exec_["kind"] == "exec" and exec_["toAgentId"] == "agent-0" and exec_["profileId"] == "next"
    rows = {row["kind"]: row for row in exec_["modules"]}
    assert rows["history"]["disposition"] == "carried"
    assert rows["history"]["fromModuleId"] == rows["history"]["toModuleId"]
    assert rows["tasks"] == {"kind": "tasks", "disposition": "dropped", "fromModuleId": "tasks-0"}
    assert rows["memories"] == {"kind": "memories", "disposition": "initialized", "toModuleId": "memories-0"}
    modules = {m["kind"]: m for m in of_type(records, "agent_modules", "agent-0")[0]["modules"]}
    assert modules["tasks"]["enabled"] is False and modules["memories"]["origin"] == "created"
    assert modules["history"]["origin"] == "transferred"


def test_a_replys_store_records_are_bounded_and_the_last_state_still_recorded(tmp_path):
    """Each store-changing tool call records the store's whole state: 420 calls in one reply over
    a task list of ~190 KB wrote ~40 MB. Past 4 MiB a reply's further states are counted, and the
    list is recorded once more as the reply left it."""
    calls = [{"name": "add_task", "args": {"id": f"t{i}", "title": "x" * 9000}} for i in range(20)]
    calls += [{"name": "update_task", "args": {"id": "t0", "title": f"title {n} " + "y" * 9000}} for n in range(400)]
    data = spec([tool_agent("coder", [{"id": "tasks", "enabled": True}])],
                {"coder": [{"toolCalls": calls}, call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    states = of_type(records, "tasks_state")[1:]  # after the opening's
    assert sum(len(json.dumps(s, ensure_ascii=False)) for s in states[:-1]) <= 4 * 1024 ** 2 and len(states) < 40
    assert states[-1]["tasks"][0]["title"].startswith("title 399 ")
    assert len(of_type(records, "tool_result")) == 421  # every call still bracketed
    assert any("store record(s) past 4 MiB were not recorded; the state of tasks" in r["message"]
               for r in of_type(records, "log") if r["level"] == "warn")


def test_a_run_mints_at_most_max_agents(tmp_path, monkeypatch):
    """Only depth was bounded: a program spawning in a loop at every depth reached 2,701 agents."""
    monkeypatch.setattr(delegation, "MAX_AGENTS", 3)
    spawns = [{"name": "spawn_subagent", "args": {"agent": "kid", "prompt": f"go {i}"}} for i in range(5)]
    data = spec([tool_agent("lead", [{"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}],
                            subagents=[{"agent": "kid", "description": "", "scopes": ["subagent"]}]),
                 tool_agent("kid")],
                {"lead": [{"toolCalls": spawns}, call("finish", summary="done")],
                 "kid": [call("finish", summary="ok")] * 3})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    results = [(r["ok"], r.get("failure")) for r in of_type(records, "tool_result", "root")
               if r["name"] == "spawn_subagent"]
    assert results == [(True, None)] * 3 + [(False, "limit-exceeded")] * 2
    assert len(of_type(records, "agent_spawned")) == 4  # the root and three
