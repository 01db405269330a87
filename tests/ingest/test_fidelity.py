"""Reading the stream as gg reads it (issue 20, items 1, 3, 4, 5, 7, 10, 11): authored streams and
the real recorded mock session, folded by the one fold, shown on the pages and in the report."""

import pytest
from django.urls import reverse

from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import Agent, Run
from runs.pages.report import build_report
from runs.pages.run_selectors import run_usage
from tests.streams import REAL_MOCK, import_stream, projection_dump

pytestmark = pytest.mark.django_db

T = "2026-08-03T10:00:0{}.000Z"


def folded(records, name="fidelity"):
    """A run holding `records`; asserts the rebuild from the log projects the same rows."""
    run = Run.objects.create(name=name)
    ingest.append(run, records)
    incremental = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == incremental
    run.refresh_from_db()
    return run


def page(client, name, *args):
    response = client.get(reverse(f"runs:{name}", args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_the_recorded_mock_sessions_root_has_its_profile_and_model(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    root = Agent.objects.get(run=run, agent_id="root")
    # never announced by agent_spawned: its one slot in session_summary.slotCosts names it
    assert (root.profile_id, root.model_id) == ("primary", "mock/echo")
    html = page(viewer_client, "agents", run.pk)
    assert "<td>primary</td>" in html and "<td>mock/echo</td>" in html


def test_an_unannounced_root_takes_the_first_profile_then_usage_names_it():
    cs = {"agents": [{"id": "builder", "name": "Builder", "modelId": "m/one"}, {"id": "explorer", "modelId": "m/two"}]}
    run = folded([
        {"type": "session_started", "timestamp": T.format(0), "capabilitySet": cs},
        {"type": "turn_started", "timestamp": T.format(1)},
    ])
    assert Agent.objects.filter(run=run, agent_id="root").values_list("profile_id", "model_id")[0] == ("builder", "m/one")
    # without a configuration, a usage record's profileId / modelId name it
    run = folded([
        {"type": "session_started", "timestamp": T.format(0)},
        {"type": "usage", "profileId": "explorer", "modelId": "m/two", "tokens": {"output": 3}},
    ], "by-usage")
    assert Agent.objects.filter(run=run, agent_id="root").values_list("profile_id", "model_id")[0] == ("explorer", "m/two")
    # an agent_spawned still says who it is
    run = folded([
        {"type": "session_started", "timestamp": T.format(0), "capabilitySet": cs},
        {"type": "agent_spawned", "profileId": "explorer", "modelId": "m/three"},
    ], "spawned")
    assert Agent.objects.filter(run=run, agent_id="root").values_list("profile_id", "model_id")[0] == ("explorer", "m/three")


def test_a_blocked_agent_says_what_it_waits_on_and_the_worktree_outcome_is_shown(viewer_client):
    run = folded([
        {"type": "session_started", "timestamp": T.format(0)},
        {"type": "agent_spawned", "agentId": "AUTH-1.0", "profileId": "builder", "timestamp": T.format(1)},
        {"type": "agent_status", "agentId": "root", "status": "blocked", "waitingOn": "issue AUTH-1", "timestamp": T.format(1)},
        {"type": "worktree_merged", "agentId": "AUTH-1.0", "branch": "gg/AUTH-1", "merged": False, "conflicts": True},
        {"type": "agent_spawned", "agentId": "AUTH-2.0", "profileId": "builder", "timestamp": T.format(2)},
        {"type": "worktree_merged", "agentId": "AUTH-2.0", "branch": "gg/AUTH-2", "merged": True, "conflicts": False},
    ])
    agents = {a.agent_id: a for a in Agent.objects.filter(run=run)}
    assert agents["root"].waiting_on == "issue AUTH-1"
    assert (agents["AUTH-1.0"].worktree_outcome, agents["AUTH-2.0"].worktree_outcome) == ("conflict", "merged")
    html = page(viewer_client, "agents", run.pk)
    assert "waiting on issue AUTH-1" in html and "worktree conflict" in html and "worktree merged" in html
    assert "Waiting on" in page(viewer_client, "agent", run.pk, "root")
    doc = build_report(Run.objects.get(pk=run.pk))
    by_id = {a["agentId"]: a for a in doc["agents"]}
    assert by_id["root"]["waitingOn"] == "issue AUTH-1" and by_id["AUTH-1.0"]["worktree"] == "conflict"
    # the next status ends the wait
    ingest.append(run, [{"type": "agent_status", "agentId": "root", "status": "running", "timestamp": T.format(3)}])
    assert Agent.objects.get(run=run, agent_id="root").waiting_on == ""
    doc = folded([{"type": "worktree_merged", "merged": False, "conflicts": False}], "discard")
    assert Agent.objects.get(run=doc, agent_id="root").worktree_outcome == "discarded"


def test_an_unowned_holding_is_shown_on_the_agent_the_stores_and_the_report(viewer_client):
    run = folded([
        {"type": "session_started", "timestamp": T.format(0)},
        {"type": "agent_modules", "modules": [
            {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created", "ownership": "unowned"}]},
    ])
    assert "unowned" in page(viewer_client, "agent", run.pk, "root")
    assert "unowned" in page(viewer_client, "stores", run.pk)
    doc = build_report(run)
    assert doc["agents"][0]["holdings"][0]["ownership"] == "unowned"
    assert doc["stores"][0]["holders"][0]["ownership"] == "unowned"


def test_api_failures_without_an_api_call_decide_the_surface(viewer_client):
    run = folded([
        {"type": "session_started", "timestamp": T.format(0)},
        {"type": "api_result", "operation": "files.read_file", "ok": False, "failure": "not_found"},
        {"type": "api_result", "operation": "files.read_file", "ok": False, "failure": "not_found"},
    ])
    html = page(viewer_client, "agents", run.pk)
    assert f'title="failed API calls"><a href="/runs/{run.pk}/feed/?agent=root&amp;kind=call&amp;failed=1">2</a></td>' in html


def test_the_header_adds_all_four_token_classes(viewer_client):
    run = folded([
        {"type": "session_started", "timestamp": T.format(0)},
        {"type": "usage", "tokens": {"uncachedInput": 100, "cachedInput": 20, "output": 3, "reasoning": 1000}},
    ])
    assert run_usage(run)["total_tokens"] == 1123


def test_a_run_before_its_session_started_reads_queued_and_says_why(viewer_client):
    run = folded([{"type": "log", "level": "info", "message": "warming up", "timestamp": T.format(0)}], "early")
    assert run.status == "running" and run.session_started_seq is None
    html = page(viewer_client, "detail", run.pk)
    assert 'id="run-status">queued<' in html
    assert "waiting for a runner: no session_started yet (1 record before it)" in html
    ingest.append(run, [{"type": "session_started", "timestamp": T.format(1)}])
    run.refresh_from_db()
    assert run.session_started_seq == 2
    assert 'id="run-status">running<' in page(viewer_client, "detail", run.pk)
