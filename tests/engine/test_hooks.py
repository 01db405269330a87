"""gg's hooks on the built-in engine (issue 21): every event and action, in both execution modes,
with gg's outcomes — continue, block (a Notice, the operation not taken), message (shown to the
model), a failing hook ending the session hook_error — and the ending gate. Every record emitted
validates against gg's telemetry schema."""

import json

import pytest

from runs.engine import hooks as hooks_mod
from runs.engine.tools import confined
from runs.engine.validation import validate_spec
from tests.engine_helpers import call, code_agent, of_type, program, run_spec, schema_errors, spec, tool_agent

pytestmark = [pytest.mark.django_db(transaction=True),
              pytest.mark.skipif(confined.unavailable_reason() is not None,
                                 reason=f"hooks run confined: {confined.unavailable_reason()}")]

FILES = [{"id": "read-file", "enabled": True}, {"id": "write-file", "enabled": True}]
SHELL = [{"id": "shell", "enabled": True}]


def command(event, line, timeout=10, **extra):
    return {"event": event, "action": {"type": "command", "command": line, "timeoutSecs": timeout, **extra}}


def custom(event, source, name=None):
    hook = {"event": event, "action": {"type": "custom", "source": source}}
    return dict(hook, name=name) if name else hook


def decide(action, **fields):
    return f"#!/bin/sh\necho '{json.dumps({'action': action, **fields})}'\n"


def hook_logs(records):
    return [r["message"] for r in of_type(records, "log") if r["message"].startswith("hook ")]


def user_texts(records):
    return [r["content"] for r in of_type(records, "context_message") if r["role"] == "user"]


def assert_valid(records):
    assert schema_errors(records) == []


def test_agent_stop_command_gate_blocks_the_first_finish_and_passes_after_the_fix(tmp_path):
    """The ending gate (seed 002): a failing check hands its output back, the session continues;
    the ending is taken only once the check passes."""
    gate = command("agent-stop", "grep -q fixed build.txt || { echo 'build failed: build.txt is broken'; exit 1; }")
    data = spec([tool_agent("coder", FILES, hooks=[gate])],
                {"coder": [call("write_file", path="build.txt", contents="broken"), call("finish", summary="done"),
                           call("write_file", path="build.txt", contents="fixed"), call("finish", summary="done")]})
    run, records = run_spec(data, tmp_path)
    assert run.status == "completed"
    outcomes = [r["outcome"] for r in of_type(records, "turn_outcome")]
    assert outcomes == ["progressed", "progressed", "progressed", "finished"]
    notices = [t for t in user_texts(records) if t.startswith("Notice")]
    assert len(notices) == 1 and "build failed: build.txt is broken" in notices[0] and "finish" in notices[0]
    logs = hook_logs(records)
    assert logs[0].startswith("hook command `grep -q fixed build.txt") and "agent-stop, command): block (exit 1)" in logs[0]
    assert "continue (exit 0)" in logs[1]
    assert_valid(records)


def test_the_gate_holds_in_a_code_agent_and_a_run_that_never_passes_is_stopped_by_a_ceiling(tmp_path):
    gate = command("agent-stop", "exit 3")
    data = spec([code_agent("coder", operations=["session.finish"], hooks=[gate])],
                {"coder": [program('gg.session.finish("done")')] * 3}, limits={"maxTurns": 3})
    run, records = run_spec(data, tmp_path)
    assert run.status == "exhausted"
    assert [r["outcome"] for r in of_type(records, "turn_outcome")] == ["progressed"] * 3
    assert [line.rsplit(": ", 1)[1] for line in hook_logs(records)] == ["block (exit 3)"] * 3
    assert any(t.startswith("Notice\n\nYour session did not end") for t in user_texts(records))
    assert_valid(records)


def test_pre_write_block_leaves_the_disk_untouched_and_fails_the_call_as_refused(tmp_path):
    hook = custom("pre-write", decide("block", reason="no secrets in the tree"), name="secret guard")
    data = spec([tool_agent("coder", FILES, hooks=[hook])],
                {"coder": [call("write_file", path="a.txt", contents="x"), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    result = of_type(records, "tool_result")[0]
    assert result["ok"] is False and result["failure"] == "refused" and "no secrets in the tree" in result["summary"]
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert hook_logs(records)[0] == "hook secret guard (pre-write, custom): block\nno secrets in the tree"
    assert run.status == "completed"
    assert_valid(records)


def test_custom_script_reads_the_payload_and_a_message_reaches_the_model(tmp_path):
    """A script gets the event as its sole argument (path, contents, agentKind) and may let the
    operation through while telling the model something."""
    source = ("#!/usr/bin/python3\nimport json, sys\ne = json.loads(sys.argv[1])\n"
              "print(json.dumps({'action': 'message', 'message': f\"{e['event']} {e['agentKind']} \"\n"
              "                  f\"{e['path'].rsplit('/', 1)[-1]} {len(e['contents'])}\"}))\n")
    data = spec([tool_agent("coder", FILES, hooks=[custom("post-write", source)])],
                {"coder": [call("write_file", path="notes.md", contents="hello"), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    assert (tmp_path / "ws" / "notes.md").read_text() == "hello"
    assert any("post-write root notes.md 5" in t for t in user_texts(records))
    assert_valid(records)


def test_shell_hooks_in_a_code_agent_block_and_comment(tmp_path):
    guard = {"event": "pre-shell", "action": {"type": "built-in", "script": "guard-destructive-shell"}}
    after = command("post-shell", "echo shell finished")
    source = ('try:\n    gg.shell.shell("rm -rf /", None)\nexcept gg.ApiError as e:\n    pass\n'
              'gg.shell.shell("echo hi", None)\ngg.session.finish("ok")')
    data = spec([code_agent("coder", SHELL, operations=["shell.shell", "session.finish"], hooks=[guard, after])],
                {"coder": [program(source)]})
    run, records = run_spec(data, tmp_path)
    results = [r for r in of_type(records, "api_result") if r["operation"] == "shell.shell"]
    assert [r["ok"] for r in results] == [False, True] and results[0]["failure"] == "refused"
    assert [r["command"] for r in of_type(records, "shell")] == ["echo hi"]  # the blocked one never started
    assert run.status == "completed"
    logs = hook_logs(records)
    assert "built-in guard-destructive-shell (pre-shell, built-in): block" in logs[0]
    assert any("post-shell, command): continue (exit 0)\nshell finished" in line for line in logs)
    assert_valid(records)


def test_a_failing_script_ends_the_session_hook_error(tmp_path):
    data = spec([tool_agent("coder", FILES, hooks=[custom("pre-write", "exit 2")])],
                {"coder": [call("write_file", path="a.txt", contents="x"), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    assert run.status == "hook_error"
    assert of_type(records, "session_ended")[-1]["status"] == "hook_error"
    assert "failed — the script exited 2" in hook_logs(records)[0]
    assert not (tmp_path / "ws" / "a.txt").exists()
    assert_valid(records)


def test_a_script_without_a_decision_and_a_command_past_its_timeout_fail_the_session(tmp_path):
    for hook, why in ((custom("agent-stop", "echo not json"), "printed no decision"),
                      (command("agent-stop", "sleep 5", timeout=0.5), "stopped (timeout)")):
        data = spec([tool_agent("coder", FILES, hooks=[hook])], {"coder": [call("finish", summary="ok")]})
        run, records = run_spec(data, tmp_path / why.split()[0], name=why)
        assert run.status == "hook_error", why
        assert why in hook_logs(records)[0]
        assert_valid(records)


def test_a_hook_failing_inside_a_program_call_ends_the_session_hook_error(tmp_path):
    data = spec([code_agent("coder", FILES, operations=["files.write_file", "session.finish"],
                            hooks=[custom("pre-write", "exit 1")])],
                {"coder": [program('gg.files.write_file("a.txt", "x")\ngg.session.finish("ok")')]})
    run, records = run_spec(data, tmp_path)
    assert run.status == "hook_error"
    assert_valid(records)


def test_agent_start_and_session_hooks_insert_into_the_opening_and_know_the_agent_kind(tmp_path):
    kind = "#!/usr/bin/python3\nimport json,sys\ne=json.loads(sys.argv[1])\nprint(json.dumps({'action':'message','message':'kind='+e['agentKind']}))\n"
    sub = {"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}
    data = spec([tool_agent("lead", [sub], hooks=[custom("agent-start", kind)],
                            subagents=[{"agentId": "helper", "description": "helps", "scopes": ["subagent"]}]),
                 tool_agent("helper", hooks=[custom("agent-start", kind)])],
                {"lead": [call("spawn_subagent", agent="helper", prompt="help"), call("wait_for_subagents"),
                          call("finish", summary="ok")],
                 "helper": [call("finish", summary="helped")]},
                hooks=[custom("session-start", decide("message", message="seeded by the run")),
                       command("session-end", "echo run over")])
    run, records = run_spec(data, tmp_path)
    assert run.status == "completed"
    texts = user_texts(records)
    assert any("seeded by the run" in t for t in texts)
    assert any("kind=root" in t for t in texts) and any("kind=subagent" in t for t in texts)
    logs = hook_logs(records)
    assert logs[-1].startswith("hook command `echo run over` (session-end, command): continue")
    assert of_type(records, "log")[-2]["message"] == logs[-1] or logs[-1] in [r["message"] for r in of_type(records, "log")]
    assert_valid(records)


def test_compaction_hooks_observe_and_post_compact_inserts(tmp_path):
    compaction = {"id": "compaction", "enabled": True, "implementation": "self-compaction"}
    data = spec([tool_agent("coder", FILES + [compaction],
                            hooks=[command("pre-compact", "echo before"), command("post-compact", "echo after it")])],
                {"coder": [call("compact", summary="so far"), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    assert run.status == "completed"
    texts = user_texts(records)
    assert any("after it" in t for t in texts) and not any("before" in t for t in texts)  # pre-compact cannot insert
    assert [line.split(" (")[1].split(",")[0] for line in hook_logs(records)] == ["pre-compact", "post-compact"]
    assert_valid(records)


def test_refuse_empty_write_and_trace_built_ins(tmp_path):
    data = spec([tool_agent("coder", FILES, hooks=[
        {"event": "pre-write", "action": {"type": "built-in", "script": "trace"}},
        {"event": "pre-write", "action": {"type": "built-in", "script": "refuse-empty-write"}}])],
        {"coder": [call("write_file", path="empty.txt", contents="  "), call("write_file", path="full.txt", contents="x"),
                   call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    assert [r["ok"] for r in of_type(records, "tool_result")][:2] == [False, True]
    assert "refusing to write an empty file" in of_type(records, "tool_result")[0]["summary"]
    assert "trace: pre-write by root" in hook_logs(records)[0]


@pytest.mark.parametrize("hooks, where, fragment", [
    ([{"event": "pre-write", "action": {"type": "command", "command": "make"}}], "agents[0].hooks[0].action.timeoutSecs", "timeoutSecs"),
    ([{"event": "session-start", "action": {"type": "command", "command": "x", "timeoutSecs": 1}}], "agents[0].hooks[0].event", "on the run"),
    ([{"event": "pre-write", "action": {"type": "built-in", "script": "nope"}}], "agents[0].hooks[0].action.script", "not a hook gg ships"),
    ([{"event": "pre-write", "action": {"type": "built-in"}}], "agents[0].hooks[0].action.script", "needs script"),
    ([{"event": "pre-write", "action": {"type": "built-in", "script": ["trace"]}}], "agents[0].hooks[0].action.script",
     "['trace'] is not a hook gg ships"),
    ([{"event": "pre-write", "action": {"type": "command", "command": "x", "timeoutSecs": 1, "cwd": "../up"}}], "agents[0].hooks[0].action.cwd", "inside the workspace"),
    ("nope", "agents[0].hooks", "a list"),
])
def test_hook_configuration_errors_name_the_field(hooks, where, fragment):
    _spec, errors = validate_spec(spec([tool_agent("coder", hooks=hooks)], {"coder": []}))
    assert any(e["path"] == where and fragment in e["message"] for e in errors), errors


def test_an_agent_event_on_the_run_is_refused():
    _spec, errors = validate_spec(spec([tool_agent("coder")], {"coder": []}, hooks=[command("agent-stop", "x")]))
    assert any(e["path"] == "hooks[0].event" and "on a profile" in e["message"] for e in errors)


def test_agent_kind_names_every_kind():
    assert set(hooks_mod.AGENT_EVENTS) | set(hooks_mod.SESSION_EVENTS) == {
        "pre-write", "post-write", "pre-shell", "post-shell", "pre-compact", "post-compact", "agent-start",
        "agent-stop", "session-start", "session-end"}


MEM = {"id": "memories", "enabled": True, "implementation": "scratchpad", "params": {"scope": "isolated"}}


def test_an_on_use_script_runs_on_every_read_and_its_failure_is_a_notice_naming_the_memory(tmp_path):
    """Seed 003: the code a memory runs on every use, given no ending group; its failure one sentence
    naming the memory, the turn's own outcome untouched."""
    ops = ["memories.write_memory", "memories.read_memory", "session.finish"]
    write = ('gg.memories.write_memory(name="notes", description="n", body="b", '
             'on_use="gg.session.finish(\'from on-use\')")\n'
             'gg.memories.write_memory(name="bad", description="n", body="b", on_use="raise KeyError(\'gone\')")')
    data = spec([code_agent("coder", [MEM], operations=ops)],
                {"coder": [program(write), program('gg.memories.read_memory("bad")\ngg.memories.read_memory("notes")'),
                           program('gg.session.finish("done")')]})
    run, records = run_spec(data, tmp_path)
    assert run.status == "completed"
    assert [r["outcome"] for r in of_type(records, "turn_outcome")] == ["progressed", "progressed", "finished"]
    notices = [t for t in user_texts(records) if t.startswith("Notice")]
    assert any("The on-use script of the memory `bad` failed: KeyError: 'gone'" in t for t in notices), notices
    # the on-use script that tried to end the session had no ending group: refused, and only that
    assert any("The on-use script of the memory `notes` failed" in t for t in notices)
    assert len(of_type(records, "code_execution")) == 5  # three programs, two on-use scripts
    assert_valid(records)
