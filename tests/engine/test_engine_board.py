"""Board dispatch on the built-in engine: wait_for_issue runs an open issue's implementer attempts
and reviewers inside the waiting call (top-level agents with derived ids and the issue on their
envelope), moving the issue on the board, reporting review rounds and the (worktree-less) merge —
through the real ingest path, code agents through the real guest, every record schema-valid."""

import json

import pytest
from django.urls import reverse

from runs.demo import DEMO_DIR
from tests.engine_helpers import (SUBAGENTS, bracket, call, code_agent, of_type, program, run_spec, schema_errors, spec,
                                  tool_agent)
from tests.pages_helpers import rows

pytestmark = pytest.mark.django_db

BOARD = {"id": "project-management", "enabled": True, "params": {"mergeAgent": "coder"}}
FILES = [{"id": "read-file", "enabled": True}, {"id": "write-file", "enabled": True}]


def board_demo(tmp_path):
    return run_spec(json.loads((DEMO_DIR / "board.spec.json").read_text()), tmp_path, name="demo-board")


def test_board_demo_dispatches_reviews_reworks_and_merges_inside_the_wait(tmp_path):
    run, records = board_demo(tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    spawned = {r["agentId"]: r for r in of_type(records, "agent_spawned")}
    assert list(spawned) == ["root", "GREET-1.0i", "GREET-1.0i.0r", "GREET-1.1i", "GREET-1.1i.0r"]
    for agent_id in list(spawned)[1:]:  # board agents: top level, scoped to the issue, on its branch
        assert spawned[agent_id]["depth"] == 0 and "parentAgentId" not in spawned[agent_id]
        assert spawned[agent_id]["worktree"] == "gg/issue-1"
        assert {r.get("issueId") for r in records if r.get("agentId") == agent_id} == {"GREET-1"}
    assert spawned["GREET-1.0i"]["profileId"] == "coder" and spawned["GREET-1.0i.0r"]["profileId"] == "critic"
    assert spawned["GREET-1.0i"]["brief"].startswith("Issue GREET-1: Write greeting.txt")
    assert "Completion criteria:\ngreeting.txt says hello, world" in spawned["GREET-1.0i"]["brief"]
    assert "- spell hello with two l's" in spawned["GREET-1.1i"]["brief"]
    assert "issueId" not in of_type(records, "agent_spawned", "root")[0]
    surfaces = {r["agentId"]: r["tools"] for r in of_type(records, "agent_surface")}
    assert surfaces["GREET-1.0i"][-1] == "finish" and surfaces["GREET-1.0i.0r"][-2:] == ["approve", "request_changes"]

    moves = [(r["agentId"], i["status"], i.get("assignedAgentId"), i["retries"])
             for r in of_type(records, "board_state") for i in r["issues"]]
    assert moves == [("root", "open", None, 0),  # create_issue's snapshot
                     ("GREET-1.0i", "in_progress", "GREET-1.0i", 0), ("GREET-1.0i", "in_review", "GREET-1.0i", 0),
                     ("GREET-1.1i", "in_progress", "GREET-1.1i", 1), ("GREET-1.1i", "in_review", "GREET-1.1i", 1),
                     ("GREET-1.1i", "done", "GREET-1.1i", 1)]
    assert len({r["moduleId"] for r in of_type(records, "board_state")}) == 1

    reviews = [{k: v for k, v in r.items() if k in ("agentId", "issueId", "phase", "items", "reviewer", "approvals")}
               for r in of_type(records, "issue_review")]
    critic = {"profileId": "critic", "profile": "Critic"}
    assert reviews == [
        {"agentId": "GREET-1.0i", "issueId": "GREET-1", "phase": "requested"},
        {"agentId": "GREET-1.0i", "issueId": "GREET-1", "phase": "changes_requested",
         "items": ["spell hello with two l's"], "reviewer": {"agentId": "GREET-1.0i.0r", **critic}},
        {"agentId": "GREET-1.1i", "issueId": "GREET-1", "phase": "requested"},
        {"agentId": "GREET-1.1i", "issueId": "GREET-1", "phase": "approved",
         "approvals": [{"agentId": "GREET-1.1i.0r", **critic}]}]
    (merged,) = of_type(records, "worktree_merged")
    assert (merged["agentId"], merged["issueId"], merged["branch"], merged["merged"], merged["conflicts"]) == (
        "GREET-1.1i", "GREET-1", "gg/issue-1", True, False)

    # The whole dispatch runs inside the root's wait, which is blocked on the issue meanwhile.
    inside, result = bracket(records, "root", "api_call", "api_result", "board.wait_for_issue")
    assert [r["agentId"] for r in inside if r["type"] == "agent_spawned"] == list(spawned)[1:]
    assert [(r["status"], r.get("waitingOn")) for r in inside if r.get("agentId") == "root"] == [
        ("blocked", "issue GREET-1"), ("running", None)]
    assert result["ok"] is True
    views = {r["label"]: r["content"] for r in of_type(records, "context_message") if r.get("label")}
    assert "GREET-1 done: greeting.txt now says hello, world." in views["GREET-1"]
    summary = of_type(records, "session_summary")[0]["summary"]
    assert (summary["issuesCreated"], summary["issuesCompleted"], summary["issueReviews"], summary["reviewCycles"],
            summary["issuesReopened"]) == (1, 1, 2, 2, 1)
    assert (tmp_path / "ws" / "greeting.txt").read_text() == "hello, world\n"


def test_the_agents_page_puts_board_agents_at_top_level(tmp_path, viewer_client):
    run, _ = board_demo(tmp_path)
    response = viewer_client.get(reverse("runs:agents", args=[run.pk]))
    assert response.status_code == 200
    html = response.content.decode()
    roster = dict(rows(html, "data-agent"))
    assert set(roster) == {"root", "GREET-1.0i", "GREET-1.0i.0r", "GREET-1.1i", "GREET-1.1i.0r"}
    assert 'data-agent="GREET-1.0i" data-level="0"' in html and 'data-agent="GREET-1.1i.0r" data-level="0"' in html
    implementer = run.agents.get(agent_id="GREET-1.0i")
    assert implementer.parent is None and implementer.depth == 0


NO_RETRIES = {**BOARD, "params": {**BOARD["params"], "maxRetries": 0}}


def test_a_failing_implementer_fails_the_issue_and_the_wait_returns_it(tmp_path):
    issue = {"title": "Write a.txt", "agent": "coder", "in_scope": ["a.txt"], "completion_criteria": ["a.txt exists"]}
    data = spec([tool_agent("lead", [NO_RETRIES], subagents=[{"agent": "coder", "description": "",
                                                         "scopes": ["implementer"]}]),
                 tool_agent("coder", FILES)],
                {"lead": [call("create_issue", **issue), call("wait_for_issue", issue_id="ISSUE-1"),
                          call("wait_for_issue", issue_id="ISSUE-1"), call("finish", summary="it failed")],
                 "coder": [{"text": "thinking"}, {"text": "still thinking"}]},
                limits={"maxParallel": 2, "maxConsecutiveErrors": 2})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    statuses = [(r["agentId"], r["status"]) for r in of_type(records, "agent_status")]
    assert statuses == [("root", "blocked"), ("ISSUE-1.0i", "running"), ("ISSUE-1.0i", "failed"), ("root", "running")]
    assert of_type(records, "limit_exceeded", "ISSUE-1.0i")[0]["breach"]["limit"] == "consecutive_errors"
    assert [i["status"] for r in of_type(records, "board_state") for i in r["issues"]] == [
        "open", "in_progress", "failed"]
    (merged,) = of_type(records, "worktree_merged")
    assert (merged["branch"], merged["merged"], merged["conflicts"]) == ("gg/issue-1", False, False)  # discarded
    assert of_type(records, "issue_review") == []
    results = [r for r in of_type(records, "tool_result", "root") if r["name"] == "wait_for_issue"]
    # The second wait finds the issue settled: it returns at once, dispatching nothing.
    assert [r["summary"] for r in results] == ["ISSUE-1 failed", "ISSUE-1 failed"]
    assert len(of_type(records, "agent_spawned")) == 2
    answers = [r["content"] for r in of_type(records, "context_message", "root") if r["role"] == "tool"][1:3]
    assert answers[0] == answers[1] == "ISSUE-1 failed: stopped by its consecutive_errors ceiling (limit_exceeded)"


def test_an_issue_without_reviewers_is_done_on_finish_and_waits_refuse_what_cannot_run(tmp_path):
    operations = ["board.create_issue", "board.wait_for_issue", "delegation.spawn_subagent", "views.open_text"]
    data = spec([code_agent("lead", [BOARD, SUBAGENTS], operations,
                            subagents=[{"agent": "coder", "description": "", "scopes": ["implementer", "subagent"]}]),
                 tool_agent("coder", FILES)],
                {"lead": [program(
                    "first = gg.board.create_issue(title='a', agent='coder')\n"
                    "second = gg.board.create_issue(title='b', agent='coder', blocked_by=[first.id])\n"
                    "for wait in (lambda: gg.board.wait_for_issue('ISSUE-9'), second.wait, first.wait, second.wait,\n"
                    "             lambda: gg.delegation.spawn_subagent(agent='coder', issue_id=first.id)):\n"
                    "    try:\n        gg.views.open_text('answer', wait())\n"
                    "    except gg.core.ApiError as err:\n        gg.views.open_text('answer', err.code)\n"),
                          program("gg.session.finish('both done')")],
                 "coder": [call("write_file", path="a.txt", contents="a"), call("finish", summary="wrote a.txt"),
                           call("finish", summary="did b")]})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    results = [(r["operation"], r["ok"], r.get("failure")) for r in of_type(records, "api_result")
               if r["operation"] in ("board.wait_for_issue", "delegation.spawn_subagent")]
    assert results == [("board.wait_for_issue", False, "not-found"),
                       ("board.wait_for_issue", False, "refused"),  # ISSUE-2 is blocked by ISSUE-1, not yet done
                       ("board.wait_for_issue", True, None), ("board.wait_for_issue", True, None),
                       ("delegation.spawn_subagent", False, "unavailable")]
    assert [r["agentId"] for r in of_type(records, "agent_spawned")] == ["root", "ISSUE-1.0i", "ISSUE-2.0i"]
    moves = [(i["id"], i["status"]) for r in of_type(records, "board_state") if r["agentId"] != "root"
             for i in r["issues"]]
    assert moves == [("ISSUE-1", "in_progress"), ("ISSUE-2", "open"), ("ISSUE-1", "done"), ("ISSUE-2", "open"),
                     ("ISSUE-1", "done"), ("ISSUE-2", "in_progress"), ("ISSUE-1", "done"), ("ISSUE-2", "done")]
    assert of_type(records, "issue_review") == []
    assert [m["branch"] for m in of_type(records, "worktree_merged")] == ["gg/issue-1", "gg/issue-2"]


def test_max_retries_sends_a_stopped_implementer_back_then_fails_the_issue(tmp_path):
    """maxRetries (gg's project-management param): each stopped attempt is retried while retries < maxRetries,
    every attempt's agent and outcome on the stream; past that the issue fails and its work is discarded."""
    issue = {"title": "Write a.txt", "agent": "coder", "in_scope": ["a.txt"], "completion_criteria": ["a.txt exists"]}
    board = {**BOARD, "params": {**BOARD["params"], "maxRetries": 2}}
    data = spec([tool_agent("lead", [board], subagents=[{"agent": "coder", "description": "", "scopes": ["implementer"]}]),
                 tool_agent("coder", FILES)],
                {"lead": [call("create_issue", **issue), call("wait_for_issue", issue_id="ISSUE-1"),
                          call("finish", summary="it failed")],
                 "coder": [{"text": "thinking"}] * 6},
                limits={"maxParallel": 2, "maxConsecutiveErrors": 2})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    assert [r["agentId"] for r in of_type(records, "agent_spawned")] == ["root", "ISSUE-1.0i", "ISSUE-1.1i", "ISSUE-1.2i"]
    moves = [(i["status"], i["retries"]) for r in of_type(records, "board_state") for i in r["issues"]]
    assert moves == [("open", 0), ("in_progress", 0), ("in_progress", 1), ("in_progress", 2), ("failed", 2)]
    notes = [r["message"] for r in of_type(records, "log") if r["message"].startswith("ISSUE-1: attempt")]
    assert notes == ["ISSUE-1: attempt ISSUE-1.0i stopped; retry 1 of 2", "ISSUE-1: attempt ISSUE-1.1i stopped; retry 2 of 2",
                     "ISSUE-1: attempt ISSUE-1.2i stopped; no retries left (maxRetries 2), the issue fails"]
    assert "the previous attempt (ISSUE-1.0i) stopped" in of_type(records, "agent_spawned", "ISSUE-1.1i")[0]["brief"]
    assert [(m["merged"], m["conflicts"]) for m in of_type(records, "worktree_merged")] == [(False, False)]


def test_issues_work_in_real_git_worktrees_merged_back_or_conflicting(tmp_path):
    """Each implementer works in `git worktree add` of the workspace on gg/issue-<n>; an accepted branch
    is merged (merged), and one git cannot merge is reported as a conflict, each as it happened."""
    board = {"id": "project-management", "enabled": True, "params": {"mergeAgent": "one"}}
    roster = [{"agent": "one", "description": "", "scopes": ["implementer"]},
              {"agent": "two", "description": "", "scopes": ["implementer"]}]
    first = {"title": "Write a.txt", "agent": "one", "in_scope": ["a.txt"], "completion_criteria": ["a.txt"]}
    second = {"title": "Also write a.txt", "agent": "two", "in_scope": ["a.txt"], "completion_criteria": ["a.txt"]}
    data = spec([tool_agent("lead", [board], subagents=roster),
                 tool_agent("one", FILES + [board], subagents=roster), tool_agent("two", FILES)],
                {"lead": [call("create_issue", **first), call("create_issue", **second),
                          call("wait_for_issue", issue_id="ISSUE-1"), call("finish", summary="ok")],
                 "one": [call("write_file", path="a.txt", contents="one\n"), call("wait_for_issue", issue_id="ISSUE-2"),
                         call("finish", summary="wrote one")],
                 "two": [call("write_file", path="a.txt", contents="two\n"), call("finish", summary="wrote two")]},
                workspace={"files": {"README": "base\n"}}, limits={"maxParallel": 2})
    run, records = run_spec(data, tmp_path)
    assert schema_errors(records) == [] and run.status == "completed", of_type(records, "log")
    ws = tmp_path / "ws"
    cwd = {r["agentId"]: r["cwd"] for r in of_type(records, "agent_spawned")}
    assert cwd["root"] == str(ws.resolve())
    assert cwd["ISSUE-1.0i"] == str(ws.resolve() / ".gg-worktrees" / "gg-issue-1")
    assert cwd["ISSUE-2.0i"] == str(ws.resolve() / ".gg-worktrees" / "gg-issue-2")
    merges = [(r["agentId"], r["branch"], r["merged"], r["conflicts"]) for r in of_type(records, "worktree_merged")]
    assert merges == [("ISSUE-2.0i", "gg/issue-2", True, False), ("ISSUE-1.0i", "gg/issue-1", False, True)]
    assert (ws / "a.txt").read_text() == "two\n"  # the merged branch's; the conflicting one left unmerged
    assert not (ws / ".gg-worktrees" / "gg-issue-1").exists()
    import subprocess
    log = subprocess.run(["git", "-C", str(ws), "-c", "safe.directory=*", "log", "--format=%s"],
                         capture_output=True, text=True).stdout.splitlines()
    assert log[0] == "gg: merge gg/issue-2" and "gg: the workspace as the run found it" in log
    assert any("conflicts with the workspace" in r["message"] for r in of_type(records, "log"))


def test_a_dispatch_that_cannot_confine_git_fails_the_wait_and_the_waiter_runs_on(tmp_path, monkeypatch):
    """No bubblewrap on the server: the issue's worktree cannot be made, so wait_for_issue fails with
    the reason, the waiter is running again (not left blocked, which ended the run internal_error)."""
    from runs.engine.tools import confined
    monkeypatch.setattr(confined, "BWRAP", str(tmp_path / "no-bwrap"))
    confined.unavailable_reason.cache_clear()
    try:
        run, records = board_demo(tmp_path)
    finally:
        confined.unavailable_reason.cache_clear()
    assert run.status != "internal_error", of_type(records, "log")
    statuses = [(r["status"], r.get("waitingOn")) for r in of_type(records, "agent_status", "root")]
    assert statuses[-2:] == [("blocked", "issue GREET-1"), ("running", None)]
    failed = [r for r in of_type(records, "api_result", "root") if r["operation"] == "board.wait_for_issue"]
    assert [r["failure"] for r in failed] == ["io-error"]
    error = of_type(records, "code_execution", "root")[0]["error"]
    assert "GREET-1 could not be dispatched" in error and "bubblewrap" in error
