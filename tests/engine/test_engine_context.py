"""Delegation and context management on the built-in engine: a blocking wait (the children's
events inside the waiting call's bracket, blocked/running statuses, cancel while it waits),
archive_thread, view closes and evictions that reclaim tokens, self-compaction and maxCost — each
run through the real ingest path (code agents through the real guest), every record schema-valid."""

import json

import pytest

from runs.engine.loop import Engine
from runs.engine.validation import validate_spec
from runs.engine.telemetry import Telemetry
from tests.engine_helpers import (SUBAGENTS, bracket, call, code_agent, of_type, program, run_spec, schema_errors, spec,
                                  tool_agent)

pytestmark = pytest.mark.django_db

ROSTER = [{"agent": "kid", "description": "", "scopes": ["subagent"]}]
CONTEXT = {"id": "agent-managed-context", "enabled": True}
FILES = [{"id": "read-file", "enabled": True}, {"id": "list-dir", "enabled": True}]


def test_a_tool_calling_wait_blocks_and_returns_the_childrens_summaries(tmp_path):
    data = spec([tool_agent("lead", [SUBAGENTS], subagents=ROSTER), tool_agent("kid", FILES)],
                {"lead": [call("spawn_subagent", agent="kid", prompt="look"), call("wait_for_subagents"),
                          call("finish", summary="done")],
                 "kid": [call("list_dir"), call("finish", summary="saw the workspace")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    inside, result = bracket(records, "root", "tool_call", "tool_result", "wait_for_subagents")
    kid = [r["type"] for r in inside if r.get("agentId") == "agent-0"]
    assert kid.count("turn_started") == 2 and kid[-2:] == ["agent_returned", "agent_status"]
    assert [(r["status"], r.get("waitingOn")) for r in inside if r.get("agentId") == "root"] == [
        ("blocked", "agent-0"), ("running", None)]
    assert inside[0]["type"] == "agent_status" and inside[-1] == {**inside[-1], "agentId": "root",
                                                                 "status": "running"}
    assert result["ok"] is True and result["summary"] == "1 returned"
    returned = [r for r in of_type(records, "context_message", "root") if r["role"] == "tool"]
    assert json.loads(returned[-1]["content"]) == [{"id": "agent-0", "status": "completed",
                                                    "summary": "saw the workspace"}]
    # The lead took three turns: the wait is one call inside its second, not a turn of its own.
    assert len(of_type(records, "turn_started", "root")) == 3


def test_a_code_agents_wait_runs_the_child_inside_the_api_call_bracket(tmp_path):
    data = spec([code_agent("lead", [SUBAGENTS], ["delegation.spawn_subagent", "delegation.wait_for_subagents"],
                            subagents=ROSTER),
                 tool_agent("kid", FILES)],
                {"lead": [program("h = gg.delegation.spawn_subagent(agent='kid', prompt='look')\n"
                                  "done = gg.delegation.wait_for_subagents([h.id])\n"
                                  "gg.views.open_text('kids', repr([(r.id, r.status, r.summary) for r in done]))\n"),
                          program("gg.session.finish('the kid looked')")],
                 "kid": [call("list_dir"), call("finish", summary="one file")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    inside, result = bracket(records, "root", "api_call", "api_result", "delegation.wait_for_subagents")
    assert result["ok"] is True
    assert [r["type"] for r in inside if r.get("agentId") == "agent-0"].count("turn_timing") == 2
    assert of_type(inside, "agent_returned")[0]["summary"] == "one file"
    views = [r["content"] for r in of_type(records, "context_message", "root") if r.get("label") == "kids"]
    assert views == ["View: kids\n\n[('agent-0', 'completed', 'one file')]"]


def test_cancel_while_waiting_stops_the_run_at_the_childs_turn_boundary(tmp_path):
    data = spec([tool_agent("lead", [SUBAGENTS], subagents=ROSTER), tool_agent("kid", FILES)],
                {"lead": [call("spawn_subagent", agent="kid", prompt="look"), call("wait_for_subagents"),
                          call("finish", summary="done")],
                 "kid": [call("list_dir")] * 5 + [call("finish", summary="x")]})
    spec_, errors = validate_spec(data)
    assert not errors
    checks = []

    def should_cancel():  # the lead's two boundaries, then the kid's first turn; its second is canceled
        checks.append(1)
        return len(checks) > 3

    telemetry = Telemetry(None, "s", sink=lambda records: None)
    assert Engine(spec_, telemetry, tmp_path / "ws", should_cancel).run() == "canceled"
    records = telemetry.emitted
    assert schema_errors(records) == []
    assert len(of_type(records, "turn_started", "agent-0")) == 1
    inside, result = bracket(records, "root", "tool_call", "tool_result", "wait_for_subagents")
    assert result["ok"] is False and result["failure"] == "other" and "canceled" in result["summary"]
    assert of_type(inside, "log")[-1]["message"] == "the operator canceled the run"
    lead = [r["type"] for r in records if r.get("agentId") == "root"]
    assert lead[lead.index("tool_result"):][:3] == ["tool_result", "turn_outcome", "turn_timing"]
    assert records[-1]["type"] == "session_ended" and records[-1]["status"] == "canceled"


@pytest.mark.parametrize("kid_replies, limits, status, limit", [
    ([call("list_dir")] * 5, {"maxTurns": 3}, "exhausted", "turns"),
    ([{"text": "prose"}] * 5, {"maxConsecutiveErrors": 2}, "limit_exceeded", "consecutive_errors"),
])
def test_a_subagents_own_ceiling_stops_it_alone_and_its_spawner_collects_the_status(
        tmp_path, kid_replies, limits, status, limit):
    data = spec([tool_agent("lead", [SUBAGENTS], subagents=ROSTER), tool_agent("kid", FILES)],
                {"lead": [call("spawn_subagent", agent="kid", prompt="look"), call("wait_for_subagents"),
                          call("finish", summary="the kid stopped")],
                 "kid": kid_replies}, limits=limits)
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    inside, result = bracket(records, "root", "tool_call", "tool_result", "wait_for_subagents")
    assert result["ok"] is True
    assert [r["breach"]["limit"] for r in of_type(records, "limit_exceeded")] == [limit]
    assert of_type(inside, "limit_exceeded")[0]["agentId"] == "agent-0"
    assert [r["status"] for r in of_type(inside, "agent_status", "agent-0")][-1] == "failed"
    assert not of_type(records, "agent_returned")
    returned = [r for r in of_type(records, "context_message", "root") if r["role"] == "tool"]
    assert json.loads(returned[-1]["content"]) == [
        {"id": "agent-0", "status": status, "summary": f"stopped by its {limit} ceiling ({status})"}]
    assert "limitHit" not in of_type(records, "session_summary")[0]["summary"]


def test_archive_thread_moves_closed_turns_out_of_the_window(tmp_path):
    data = spec([tool_agent("coder", FILES + [CONTEXT])],
                {"coder": [call("list_dir"), call("read_file", path="a.txt"),
                           call("archive_thread", ranges=[{"from": 1, "to": 2}]),
                           call("search_archive", query="alpha"), call("finish", summary="ok")]},
                workspace={"files": {"a.txt": "alpha beta\n"}})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    assert of_type(records, "archive_state")[0]["count"] == 0  # the opening's snapshot
    managed = of_type(records, "context_managed")
    assert len(managed) == 1 and managed[0]["action"] == "archive_thread"
    assert managed[0]["items"] == 4 and managed[0]["reclaimedTokens"] > 0  # two replies, two tool results
    assert managed[0]["earliestRemoved"] == 2  # after the system prompt and the task
    after = records[records.index(managed[0]) + 1]
    assert after["type"] == "archive_state" and after["count"] == 4 and after["moduleId"] == "archive-0"
    assert [e["role"] for e in after["entries"]] == ["assistant", "tool", "assistant", "tool"]
    assert after["entries"][3]["preview"].startswith("alpha beta") and after["entries"][3]["source"] == "tool_output"
    prompts = of_type(records, "prompt")
    assert len(prompts[3]["request"]) == len(prompts[2]["request"]) - 4 + 2
    search = of_type(records, "tool_result")[3]
    assert search["ok"] is True and search["summary"] == "1 hits"


def test_archive_thread_refuses_a_turn_that_is_still_open(tmp_path):
    data = spec([tool_agent("coder", [CONTEXT])],
                {"coder": [call("archive_thread", ranges=[{"from": 1, "to": 1}]), call("finish", summary="ok")]})
    run, records = run_spec(data, tmp_path)
    result = of_type(records, "tool_result")[0]
    assert result["ok"] is False and result["failure"] == "invalid-argument" and "still open" in result["summary"]
    assert of_type(records, "context_managed") == []


def test_closing_views_gives_their_tokens_back(tmp_path):
    ops = ["files.read_file", "views.open_file", "views.close", "context.evict_file_view", "docs.close_all"]
    data = spec([code_agent("coder", FILES + [CONTEXT, {"id": "docview-close", "enabled": True}], ops)],
                {"coder": [program("gg.views.open_file('a.txt')\ngg.views.open_file('b.txt')\n"
                                   "gg.views.open_text('note', 'x' * 400)\ngg.views.open_docs_view('gg.files.read_file')\n"),
                           program("gg.views.close('note')\ngg.views.close('absent')\n"
                                   "r = gg.context.evict_file_view(None)\ngg.docs.close_all()\n"
                                   "gg.views.open_text('evicted', repr((r.items, r.paths)))\n"),
                           program("gg.session.finish('closed')")]},
                workspace={"files": {"a.txt": "a\n" * 50, "b.txt": "b\n" * 80}})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    managed = {r["action"]: r for r in of_type(records, "context_managed")}
    assert list(managed) == ["close_text_views", "evict_file_views", "close_docs_views"]  # nothing for `absent`
    views = {r["label"]: r for r in of_type(records, "context_message") if r.get("label")}
    assert managed["close_text_views"] == {**managed["close_text_views"], "items": 1, "detail": "1 text view(s)",
                                           "reclaimedTokens": views["note"]["tokens"]}
    evicted = managed["evict_file_views"]
    assert evicted["items"] == 2 and evicted["detail"] == "2 file view(s)"
    assert evicted["reclaimedTokens"] == views["a.txt"]["tokens"] + views["b.txt"]["tokens"]
    first_prompt = of_type(records, "prompt")[1]["request"]
    assert evicted["earliestRemoved"] == [m["id"] for m in first_prompt].index(views["a.txt"]["id"])
    assert managed["close_docs_views"]["detail"] == "all of them"
    assert views["evicted"]["content"].endswith("(2, ['a.txt', 'b.txt'])")
    last_prompt = {m["id"] for m in of_type(records, "prompt")[2]["request"]}
    assert not last_prompt & {views[k]["id"] for k in ("a.txt", "b.txt", "note")}


def test_a_self_compaction_replaces_the_thread_with_the_summary(tmp_path):
    compaction = {"id": "compaction", "enabled": True, "implementation": "self-compaction"}
    data = spec([tool_agent("coder", FILES + [compaction, {"id": "tasks", "enabled": True}])],
                {"coder": [call("add_task", id="t", title="T"), call("read_file", path="a.txt"),
                           call("compact", summary="Read a.txt; task t is open.", files=["a.txt"]),
                           call("finish", summary="ok")]},
                workspace={"files": {"a.txt": "alpha\n" * 200}})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    event = of_type(records, "compaction")[0]
    fourth = [r["type"] for r in records if r.get("agentId") == "root"]
    fourth = fourth[[i for i, t in enumerate(fourth) if t == "turn_started"][3]:]
    assert fourth[:3] == ["turn_started", "compaction", "context_breakdown"]
    assert event["strategy"] == "self-compaction" and event["summary"] == "Read a.txt; task t is open."
    assert event["retained"] == {"skills": 0, "tasks": 1, "memories": 0} and event["summaryFallback"] is False
    assert event["afterTokens"] < event["beforeTokens"]
    bands = {b["source"]: b["tokens"] for b in event["afterBySource"]}
    assert bands["history"] == event["summaryTokens"] and bands["file_view"] > 0 and bands["tool_output"] == 0
    last = of_type(records, "prompt")[-1]["request"]
    assert [m["source"] for m in last] == ["system", "user_prompt", "history", "file_view"]
    assert of_type(records, "session_summary")[0]["summary"]["compactions"] == 1


def test_max_cost_is_checked_against_summed_usage_at_turn_boundaries(tmp_path):
    data = spec([tool_agent("coder", FILES)], {"coder": [{"cost": 0.3, **call("list_dir")}] * 4},
                limits={"maxCost": 0.5})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "limit_exceeded"
    assert len(of_type(records, "turn_started")) == 2
    breach = of_type(records, "limit_exceeded")[0]["breach"]
    assert breach == {"limit": "cost", "threshold": 0.5, "observed": 0.6, "turns": 2, "agentId": "root"}
    assert of_type(records, "usage")[0]["cost"] == {"comparable": 0.3, "actual": 0.3}


def test_a_tool_calling_eviction_stubs_the_read_and_reclaims_its_tokens(tmp_path):
    data = spec([tool_agent("coder", FILES + [CONTEXT])],
                {"coder": [call("read_file", path="a.txt"), call("evict_file_view", path="a.txt"),
                           call("evict_file_view", path="a.txt"), call("finish", summary="ok")]},
                workspace={"files": {"a.txt": "alpha\n" * 100}})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed"
    read = [r for r in of_type(records, "context_message") if r["role"] == "tool"][0]
    (managed,) = of_type(records, "context_managed")  # the second eviction reclaimed nothing: no event
    stub = [r for r in of_type(records, "context_message") if r.get("content") == "(the view of a.txt was evicted)"]
    assert managed["action"] == "evict_file_views" and managed["items"] == 1
    assert managed["reclaimedTokens"] == read["tokens"] - stub[0]["tokens"]
    assert read["id"] not in {m["id"] for m in of_type(records, "prompt")[-1]["request"]}
