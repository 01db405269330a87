"""Feed rows read as gg's console reads them (issue 20, items 2 and 10), and the declared scope the
divergences read off an id-keyed capability set."""

import pytest

from runs.feed.windows import FeedRenderer
from runs.ingest.writer import append
from runs.models import Run
from runs.pages.common import run_agents, run_holdings
from runs.pages.divergences import run_divergences

pytestmark = pytest.mark.django_db

# gg's mid-era capability set: profiles keyed by `id`, no slug.
ID_KEYED = {"agents": [
    {"id": "builder", "name": "Builder", "capabilities": [{"id": "memories", "params": {"scope": "inherited"}}]},
    {"id": "explorer", "name": "Explorer"},
]}


def feed_rows(records, name):
    run = Run.objects.create(name=name)
    append(run, records)
    rows, _ = FeedRenderer(run.pk).next_batch(0)
    return run, [r for r in rows if r.kind != "raw"]


def test_id_keyed_profiles_are_named_in_the_feed_and_read_by_the_divergences():
    run, rows = feed_rows([
        {"type": "session_started", "capabilitySet": ID_KEYED},
        {"type": "agent_transition", "kind": "exec", "toAgentId": "agent-1", "profileId": "builder", "modules": []},
        {"agentId": "agent-2", "type": "fsm_state", "fsmId": "tdd", "state": "explore", "profileId": "explorer"},
        {"agentId": "agent-1", "type": "agent_spawned", "profileId": "builder"},
        {"agentId": "agent-1", "type": "agent_modules", "modules": [
            {"kind": "memories", "moduleId": "memories-1", "enabled": True, "origin": "created"}]},
    ], "id-keyed")
    details = [r.detail for r in rows]
    assert "Continued as `Builder` (agent-1)." in details
    assert "Entered `explore`, running Explorer." in details
    found = run_divergences(run, run_agents(run), run_holdings(run))
    assert [(d["kind"], d["agentId"], d["declared"]) for d in found] == [
        ("inherited_fell_back", "agent-1", "scope: inherited")]


def test_tool_rows_without_arguments_and_context_managed_without_reclaimed_tokens():
    _, rows = feed_rows([
        {"type": "tool_call", "name": "list_tasks", "args": {}},
        {"type": "tool_call", "name": "read_file", "args": {"path": "a"}},
        {"type": "context_managed", "action": "close_text_views", "reclaimedTokens": 0, "items": 1, "detail": "closed"},
        {"type": "context_managed", "action": "close_text_views", "reclaimedTokens": 1200, "items": 2, "detail": "closed"},
    ], "args")
    assert [r.args for r in rows] == ["", '{"path":"a"}', "1 item", "reclaimed 1.2k tokens · 2 items"]


def test_a_healed_code_execution_gets_a_row_saying_what_was_healed():
    _, rows = feed_rows([
        {"type": "code_execution", "ok": True, "logs": [],
         "healing": {"strategies": ["strip_fences", "dedent"], "blocks": 2, "didNotConverge": False}},
        {"type": "code_execution", "ok": True, "logs": ["hi"], "healing": {"strategies": [], "didNotConverge": True}},
        {"type": "code_execution", "ok": True, "logs": [], "healing": {"strategies": []}},
    ], "healing")
    assert [(r.label, r.detail, r.tone) for r in rows[:1]] == [
        ("healed", "The reply was repaired before it was compiled (strip_fences, dedent). 2 code blocks in the reply.", "warn")]
    assert rows[1].args == "1 line · The healing did not reach a fixpoint."
    assert len(rows) == 2  # nothing healed, nothing printed: no row
