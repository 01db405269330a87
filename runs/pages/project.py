"""The Project tab (templates/runs/project.html): the run's board as its latest `board_state`
snapshot tells it — epics, and under each its issues as `id: title` with one state badge (status,
or `blocked` while a blocker is not done), retries, the brief (in scope / out of scope / criteria)
and the assigned agent — and one review round per `issue_review` `requested` (who asked for which
changes, who approved), closed by the next verdict (spec/stream.md §4.29, §7.5).
Tests: tests/pages/test_project.py.
"""

from __future__ import annotations

from collections import defaultdict

from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Event, ModuleStore, Run
from runs.pages.common import run_context
from runs.stream.record import as_list, as_text, gg_record

# A bounded window over the log: the rounds read at most this many issue_review records.
REVIEWS_READ = 2000


@require_GET
def project_page(request, pk):
    run = run_or_404(pk)
    agent_ids = set(run.agents.values_list("agent_id", flat=True))
    return render(request, "runs/project.html", run_context(run, "project", project=run_project(run), agent_ids=agent_ids))


def _reviewer(value) -> str:
    if isinstance(value, dict):
        return as_text(value.get("agentId") or value.get("profile") or value.get("profileId") or "")
    return as_text(value) if value else ""


def review_rounds(run: Run) -> dict[str, list[dict]]:
    """{issue id: [{phase, reviewer, items, approvals, seq}]}: `requested` opens a round, the next
    verdict on the same issue closes it; a verdict without an open round is a round of its own."""
    rounds = defaultdict(list)
    rows = Event.objects.filter(run=run, type="issue_review").order_by("seq").values_list("seq", "raw")[:REVIEWS_READ]
    for seq, raw in rows:
        rec = gg_record(raw)
        issue = as_text(rec.get("issueId") or "")
        phase = as_text(rec.get("phase") or "", 32)
        open_round = rounds[issue][-1] if rounds[issue] and rounds[issue][-1]["phase"] == "requested" else None
        if phase == "requested" or open_round is None:
            rounds[issue].append({"phase": phase, "reviewer": _reviewer(rec.get("reviewer")), "items": [],
                                  "approvals": [], "seq": seq})
            if phase == "requested":
                continue
        current = rounds[issue][-1]
        current["phase"] = phase
        current["reviewer"] = _reviewer(rec.get("reviewer")) or current["reviewer"]
        current["items"] = [as_text(i, 2000) if not isinstance(i, dict) else as_text(i.get("text") or i.get("summary") or i, 2000)
                            for i in as_list(rec.get("items"))]
        current["approvals"] = [_reviewer(a) for a in as_list(rec.get("approvals")) if _reviewer(a)]
        current["seq"] = seq
    return rounds


def _state(issue: dict, status_by_id: dict) -> str:
    status = as_text(issue.get("status") or "open", 32)
    if status in ("open", "in_progress") and any(status_by_id.get(b) != "done" for b in issue["blocked_by"]):
        return "blocked"
    return status


def run_project(run: Run) -> dict:
    store = ModuleStore.objects.filter(run=run, kind="board").exclude(snapshot=None).order_by("-snapshot_seq").first()
    snapshot = store.snapshot if store is not None and isinstance(store.snapshot, dict) else {}
    rounds = review_rounds(run)
    issues = []
    for raw in as_list(snapshot.get("issues")):
        if not isinstance(raw, dict):
            continue
        issues.append({
            "id": as_text(raw.get("id") or ""), "title": as_text(raw.get("title") or "", 500),
            "epic": as_text(raw.get("epicId") or ""), "status": as_text(raw.get("status") or "open", 32),
            "blocked_by": [as_text(b) for b in as_list(raw.get("blockedBy"))],
            "retries": raw.get("retries") if isinstance(raw.get("retries"), int) else 0,
            "in_scope": [as_text(s, 2000) for s in as_list(raw.get("inScope"))],
            "out_of_scope": [as_text(s, 2000) for s in as_list(raw.get("outOfScope"))],
            "criteria": [as_text(s, 2000) for s in as_list(raw.get("completionCriteria"))],
            "assigned": as_text(raw.get("assignedAgentId") or ""), "profile": as_text(raw.get("agentId") or ""),
        })
    status_by_id = {i["id"]: i["status"] for i in issues}
    for i in issues:
        i["state"] = _state(i, status_by_id)
        i["rounds"] = rounds.get(i["id"], [])
    epics = [{"id": as_text(e.get("id") or ""), "title": as_text(e.get("title") or "", 500)}
             for e in as_list(snapshot.get("epics")) if isinstance(e, dict)]
    known = {e["id"] for e in epics}
    groups = [{**e, "issues": [i for i in issues if i["epic"] == e["id"]]} for e in epics]
    loose = [i for i in issues if i["epic"] not in known]
    if loose:
        groups.append({"id": "", "title": "Without an epic", "issues": loose})
    return {"store": store.module_id if store else "", "epics": groups, "issue_count": len(issues)}
