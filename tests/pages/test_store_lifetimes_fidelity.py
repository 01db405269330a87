"""Store lifetimes as the stream tells them (issue 20, items 8 and 9): a fork's copy starts at its
`copied` row, and a store swapped away under a successor, held by nobody any more, is dropped."""

import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run
from runs.pages.common import run_agents, run_holdings
from runs.pages.stores import store_index

pytestmark = pytest.mark.django_db


def mem(module_id, origin):
    return {"type": "agent_modules", "modules": [{"kind": "memories", "moduleId": module_id, "enabled": True, "origin": origin}]}


def test_a_forks_copy_starts_copied_and_a_swapped_away_store_is_dropped(viewer_client):
    run = Run.objects.create(name="lifetimes")
    append(run, [
        {"type": "session_started"},
        {**mem("memories-0", "created"), "agentId": "root"},
        {"type": "agent_transition", "agentId": "root", "kind": "fork", "toAgentId": "root.f1", "modules": [
            {"kind": "memories", "disposition": "copied", "fromModuleId": "memories-0", "toModuleId": "memories-1"}]},
        {**mem("memories-1", "copied"), "agentId": "root.f1"},
        {"type": "agent_transition", "agentId": "root", "kind": "exec", "toAgentId": "agent-2", "modules": [
            {"kind": "memories", "disposition": "carried", "fromModuleId": "memories-0", "toModuleId": "memories-2"}]},
        {**mem("memories-2", "created"), "agentId": "agent-2"},
    ])
    views = {v.module_id: v for v in store_index(run, run_agents(run), run_holdings(run))}
    assert [r["event"] for r in views["memories-1"].lifetime] == ["copied"]
    assert [r["event"] for r in views["memories-0"].lifetime] == ["created", "copied", "swapped"]
    assert views["memories-0"].released_by == ["root"] and views["memories-0"].dropped is True
    assert views["memories-2"].dropped is False and views["memories-1"].dropped is False
    html = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    assert html.count('data-lifetime="dropped"') == 1
