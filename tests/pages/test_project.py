"""The Project tab (runs/pages/project.py): the board's epics and issues with one review round per
issue_review request."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run

pytestmark = pytest.mark.django_db


def test_the_project_tab_shows_the_board_with_states_briefs_and_review_rounds(viewer_client):
    from runs.pages.project import run_project
    run = Run.objects.create(name="project")
    board = {"type": "board_state", "moduleId": "board-0",
             "epics": [{"id": "AUTH", "title": "Sign-in", "description": ""}],
             "issues": [
                 {"id": "AUTH-1", "title": "Login form", "epicId": "AUTH", "status": "done", "blockedBy": [],
                  "inScope": ["the form"], "outOfScope": ["SSO"], "completionCriteria": ["tests pass"],
                  "agentId": "builder", "assignedAgentId": "AUTH-1.0i", "retries": 1, "reviewerIds": []},
                 {"id": "AUTH-2", "title": "Logout <b>now</b>", "epicId": "AUTH", "status": "open", "blockedBy": ["AUTH-3"],
                  "inScope": [], "outOfScope": [], "completionCriteria": [], "agentId": "builder", "retries": 0},
                 {"id": "ISSUE-1", "title": "Docs", "status": "in_review", "blockedBy": ["AUTH-1"],
                  "inScope": [], "outOfScope": [], "completionCriteria": [], "agentId": "builder", "retries": 0},
             ]}
    append(run, [
        {"type": "session_started"}, board,
        {"type": "issue_review", "agentId": "AUTH-1.0i", "issueId": "AUTH-1", "phase": "requested"},
        {"type": "issue_review", "agentId": "AUTH-1.0r", "issueId": "AUTH-1", "phase": "changes_requested",
         "items": ["name the field"], "reviewer": {"agentId": "AUTH-1.0r", "profileId": "reviewer"}},
        {"type": "issue_review", "agentId": "AUTH-1.0i", "issueId": "AUTH-1", "phase": "requested"},
        {"type": "issue_review", "agentId": "AUTH-1.0r", "issueId": "AUTH-1", "phase": "approved",
         "approvals": [{"agentId": "AUTH-1.0r"}]},
    ])
    project = run_project(run)
    auth, loose = project["epics"]
    assert [(i["id"], i["state"]) for i in auth["issues"]] == [("AUTH-1", "done"), ("AUTH-2", "blocked")]
    assert [(i["id"], i["state"]) for i in loose["issues"]] == [("ISSUE-1", "in_review")]  # its blocker is done
    rounds = auth["issues"][0]["rounds"]
    assert [(r["phase"], r["reviewer"], r["items"], r["approvals"]) for r in rounds] == [
        ("changes_requested", "AUTH-1.0r", ["name the field"], []), ("approved", "", [], ["AUTH-1.0r"])]
    html = viewer_client.get(reverse("runs:project", args=[run.pk])).content.decode()
    assert "AUTH-1: Login form" in html and 'data-state="blocked"' in html and "1 retry" in html
    assert "Logout &lt;b&gt;now&lt;/b&gt;" in html and "2 review rounds" in html and "SSO" in html
