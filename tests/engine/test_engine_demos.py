"""Each shipped demo runs to its expected end state, and its whole stream validates line by line
against gg's telemetry schema."""

import json

import pytest

from runs.demo import DEMO_DIR
from tests.engine_helpers import of_type, run_spec, schema_errors

pytestmark = pytest.mark.django_db


def demo(name):
    return json.loads((DEMO_DIR / f"{name}.spec.json").read_text())


def test_delegation_demo_fallback_fork_and_exec(tmp_path):
    run, records = run_spec(demo("delegation"), tmp_path)
    assert schema_errors(records) == []
    assert run.status == "completed"
    spawned = {r["agentId"]: r for r in of_type(records, "agent_spawned")}
    assert list(spawned) == ["root", "agent-0", "agent-1", "agent-2"]
    assert spawned["agent-0"]["profileId"] == "helper" and spawned["agent-0"]["parentAgentId"] == "root"
    # The helper's inherited memories fall back: the lead holds none.
    helper_memories = of_type(records, "agent_modules", "agent-0")[0]["modules"][1]
    assert helper_memories == {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created",
                               "writable": True, "scope": "inherited"}
    assert of_type(records, "agent_returned", "agent-0")[0]["summary"] == "The plan is in memory `plan`."
    fork, exec_ = of_type(records, "agent_transition", "root")
    assert fork["kind"] == "fork" and fork["toAgentId"] == "agent-1"
    rows = {row["kind"]: row for row in fork["modules"]}
    assert rows["history"]["disposition"] == "copied" and rows["history"]["fromModuleId"] != rows["history"]["toModuleId"]
    assert rows["tasks"] == {"kind": "tasks", "disposition": "copied", "fromModuleId": "tasks-0", "toModuleId": "tasks-1"}
    assert rows["memories"]["disposition"] == "absent"
    assert exec_["kind"] == "exec" and exec_["toAgentId"] == "agent-2" and exec_["profileId"] == "finisher"
    rows = {row["kind"]: row for row in exec_["modules"]}
    assert rows["history"]["disposition"] == "carried"
    assert rows["tasks"] == {"kind": "tasks", "disposition": "carried", "fromModuleId": "tasks-0", "toModuleId": "tasks-0"}
    assert rows["memories"]["disposition"] == "absent"
    assert spawned["agent-2"]["parentAgentId"] == "root" and spawned["agent-2"]["depth"] == 0
    assert of_type(records, "agent_modules", "agent-2")[0]["modules"][2]["origin"] == "transferred"
    tasks = of_type(records, "tasks_state", "agent-2")
    assert tasks[-1]["moduleId"] == "tasks-0" and tasks[-1]["tasks"][0]["status"] == "done"
    statuses = [(r["agentId"], r["status"]) for r in of_type(records, "agent_status")]
    assert ("root", "blocked") in statuses and ("root", "running") in statuses
    # The helper's whole session runs inside the lead's first wait_for_subagents call.
    types = [(r["type"], r.get("agentId"), r.get("name")) for r in records]
    start = types.index(("tool_call", "root", "wait_for_subagents"))
    assert start < types.index(("agent_returned", "agent-0", None)) < types.index(
        ("tool_result", "root", "wait_for_subagents"))


def test_review_demo_requests_changes_then_approves(tmp_path):
    run, records = run_spec(demo("review"), tmp_path)
    assert schema_errors(records) == []
    assert run.status == "completed"
    surfaces = {r["agentId"]: r for r in of_type(records, "agent_surface")}
    assert surfaces["agent-0"]["tools"] == ["read_file", "approve", "request_changes"]
    assert surfaces["root"]["tools"][-1] == "finish" and "approve" not in surfaces["root"]["tools"]
    assert of_type(records, "agent_returned", "agent-0")[0]["summary"] == \
        "changes requested:\n- spell hello with two l's"
    assert of_type(records, "agent_returned", "agent-1")[0]["summary"] == "approved"
    assert (tmp_path / "ws" / "greeting.txt").read_text() == "hello, world\n"


def test_code_root_demo_reads_views_is_refused_delegates_tidies_and_finishes(tmp_path):
    run, records = run_spec(demo("code-root"), tmp_path)
    assert schema_errors(records) == []
    assert run.status == "completed", [r for r in of_type(records, "log")]
    surface = of_type(records, "agent_surface")[0]
    assert surface["executionMode"] == "responses_as_code" and surface["tools"] == []
    assert surface["programLanguage"] == "python" and surface["docViewTypes"] == "return+errors"
    assert {api["module"] for api in surface["apis"]} >= {"files", "views", "session"}
    calls = [(r["operation"], r["ok"], r.get("failure")) for r in of_type(records, "api_result")]
    assert ("files.read_file", True, None) in calls
    assert ("shell.shell", False, "unavailable") in calls
    assert calls[-1] == ("session.finish", True, None)
    assert of_type(records, "code_execution")[-1]["finished"].startswith("Read notes.txt")
    # The session summary's undocumented calls are the sum of every program's.
    per_program = {}
    for record in of_type(records, "code_execution"):
        for operation, n in record.get("undocumentedCalls", {}).get("operations", {}).items():
            per_program[operation] = per_program.get(operation, 0) + n
    undocumented = of_type(records, "session_summary")[0]["summary"]["undocumentedCalls"]
    assert per_program and undocumented == {"calls": sum(per_program.values()), "operations": per_program}
    assert all(r["ok"] for r in of_type(records, "code_execution"))
    assert of_type(records, "memory_state")[-1]["count"] == 1
    views = [r for r in of_type(records, "context_message") if r.get("label") == "notes.txt"]
    assert views and views[0]["content"].startswith("File: notes.txt")
    # The scout runs inside the coder's wait: its whole session lands inside the api_call bracket.
    types = [(r["type"], r.get("agentId"), r.get("operation")) for r in records]
    start = types.index(("api_call", "root", "delegation.wait_for_subagents"))
    end = types.index(("api_result", "root", "delegation.wait_for_subagents"))
    inside = records[start + 1:end]
    assert [r["status"] for r in of_type(inside, "agent_status", "root")] == ["blocked", "running"]
    assert of_type(inside, "agent_returned", "agent-0")[0]["summary"] == "The workspace holds notes.txt."
    scout = [r for r in of_type(records, "context_message", "root") if r.get("label") == "scout"]
    assert scout[0]["content"] == "View: scout\n\nagent-0 (completed): The workspace holds notes.txt."
    evict, archive = of_type(records, "context_managed")
    assert (evict["action"], evict["items"], evict["reclaimedTokens"]) == ("evict_file_views", 1, views[0]["tokens"])
    assert archive["action"] == "archive_thread" and archive["items"] > 0
    assert of_type(records, "archive_state")[-1]["count"] == archive["items"]
    compaction = of_type(records, "compaction")[0]
    assert compaction["strategy"] == "self-summarization" and compaction["retained"]["memories"] == 1
    assert of_type(records, "session_summary")[0]["summary"]["compactions"] == 1


def test_arms_demo_compares_a_typescript_root_a_python_subagent_and_a_tool_caller(tmp_path):
    run, records = run_spec(demo("arms"), tmp_path)
    assert schema_errors(records) == []
    assert run.status == "completed", [r for r in records if r["type"] in ("log", "code_execution")][-5:]
    surfaces = {r["agentId"]: r for r in of_type(records, "agent_surface")}
    assert list(surfaces) == ["root", "agent-0", "agent-1"]
    root, python, reader = surfaces["root"], surfaces["agent-0"], surfaces["agent-1"]
    assert (root["programLanguage"], root["docViewTypes"]) == ("typescript", "return+errors")
    assert (python["programLanguage"], python["docViewTypes"]) == ("python", "return+parameters+errors")
    assert reader["executionMode"] == "tool_calling" and not reader.get("apis") and "read_file" in reader["tools"]
    files = next(api for api in root["apis"] if api["module"] == "files")
    assert files["path"] == "gg.files" and {"name": "readFile", "operation": "files.read_file"} in files["functions"]
    py_files = next(api for api in python["apis"] if api["module"] == "files")
    assert {"name": "read_file", "operation": "files.read_file"} in py_files["functions"]
    # Both code agents looked the SDK up in their own arm's spelling and read the same file.
    views = {agent: [r.get("label") for r in of_type(records, "context_message", agent)] for agent in surfaces}
    assert "gg.files.readFile" in views["root"] and "gg.files.read_file" in views["agent-0"]
    executions = {r["agentId"]: r for r in of_type(records, "code_execution")}
    assert executions["root"]["ok"] and executions["agent-0"]["ok"]
    assert [r["operation"] for r in of_type(records, "api_call", "agent-0")][:3] == [
        "docs.search", "views.open_docs_view", "files.read_file"]
    assert of_type(records, "agent_returned", "agent-0")[0]["summary"] == "4 vendors; Globex has the most orders (340)."
    assert of_type(records, "agent_returned", "agent-1")[0]["summary"] == "4 vendors; Globex has the most orders (340)."
    # A documentation search is charged to the search_results band, a lookup's views to docs_view.
    for agent in ("root", "agent-0"):
        bands = [{b["source"]: b["tokens"] for b in r["bySource"]} for r in of_type(records, "context_breakdown", agent)]
        assert any(b["search_results"] > 0 for b in bands) and any(b["docs_view"] > 0 for b in bands)


def test_a_code_agents_system_prompt_names_its_modules_in_its_own_arm(tmp_path):
    _, records = run_spec(demo("arms"), tmp_path)
    system = {agent: next(r["content"] for r in of_type(records, "context_message", agent) if r["role"] == "system")
              for agent in ("root", "agent-0", "agent-1")}
    assert 'reach gg through `import * as gg from "gg";`' in system["root"]
    assert "- gg.files: Read, write" in system["root"] and "- gg.delegation:" in system["root"]
    assert "nothing `console.log` writes is readable by you" in system["root"]
    assert "reach gg through `import gg`" in system["agent-0"] and "- gg.delegation:" not in system["agent-0"]
    assert "nothing `print` writes" in system["agent-0"]
    assert "gg's modules" not in system["agent-1"]  # a tool-calling agent binds no module

def test_gate_demo_blocks_the_first_ending_and_reviews_only_after_the_fix(tmp_path):
    """Seed 002: bind a hook to agent-stop and an issue reaches review only once its build passes."""
    run, records = run_spec(demo("gate"), tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    seq = [(r["type"], r.get("message", r.get("phase", r.get("name"))))
           for r in records if r.get("agentId") == "GREET-1.0i" and r["type"] in ("log", "tool_call", "issue_review")]
    hooks = [i for i, (t, m) in enumerate(seq) if t == "log" and m.startswith("hook build check")]
    assert [seq[i][1].split(": ", 1)[1].split("\n")[0] for i in hooks] == ["block (exit 1)", "continue (exit 0)"]
    edit = seq.index(("tool_call", "edit_file"))
    review = seq.index(("issue_review", "requested"))
    assert hooks[0] < edit < hooks[1] < review  # blocked, fixed, passed, then reviewed
    notice = next(r["content"] for r in of_type(records, "context_message", "GREET-1.0i")
                  if r["role"] == "user" and r["content"].startswith("Notice"))
    assert "build failed: greeting.txt must read exactly" in notice
    assert [r["phase"] for r in of_type(records, "issue_review")] == ["requested", "approved"]
