"""Feed rows read as gg's console reads them (issue 20, items 2, 5, 6 and 10), and the declared scope the
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


def test_a_healed_code_execution_shows_what_was_healed_and_the_reply_as_sent():
    # GgResponseHealing carries no copy of the reply: gg's own record of the reply as sent is the
    # turn's assistant_message (under responses-as-code the assistant message is the program).
    reply = "```ts\nimport { fs } from 'gg';\nfs.readFile('a');\n```"
    run, rows = feed_rows([
        {"type": "turn_started"},
        {"type": "assistant_message", "text": reply},
        {"type": "code_execution", "ok": True, "toolCalls": 2, "logs": [],
         "healing": {"strategies": ["strip-fences", "drop-imports"], "didNotConverge": False}},
        {"type": "turn_started"},
        {"type": "assistant_message", "text": "I will now write the file."},
        {"type": "code_execution", "ok": True, "toolCalls": 0, "logs": ["hi"],
         "healing": {"strategies": [], "notAProgram": "several_blocks", "blocks": 2, "candidateShape": "fenced",
                     "didNotConverge": True}},
        {"type": "turn_started"},
        {"type": "code_execution", "ok": False, "error": "Traceback\n  line 1\nSyntaxError: bad", "toolCalls": 0,
         "logs": [], "healing": {"strategies": ["strip-prose"]}},
        {"type": "code_execution", "ok": True, "logs": [], "healing": {"strategies": []}},  # clean: gg omits it
    ], "healing")
    healed = [r for r in rows if r.kind == "program"]
    assert [(r.label, r.detail, r.tone) for r in healed] == [
        ("healed", "program ran · 2 tool calls · healed: strip-fences, drop-imports", "warn"),
        ("not a program", "not a program: several programs (2, fenced) · healing did not converge", "warn"),
        ("healed", "program failed · healed: strip-prose · SyntaxError: bad", "fail"),
    ]
    assert (healed[0].args, healed[0].output) == ("the reply as sent", reply)
    assert healed[1].args == "the reply as sent · 1 line printed"
    assert healed[1].output == "I will now write the file.\n\n— printed —\nhi"
    assert healed[2].output == "(no assistant message in this turn)"
    assert len([r for r in rows if r.kind in ("program", "output")]) == 3
    # resumed from the code_execution's own cursor, the reply is read from the log before it
    again, _ = FeedRenderer(run.pk).next_batch(2, limit=1)
    assert again[0].output == reply


def test_an_exec_transition_without_a_profile_names_only_the_successor():
    _, rows = feed_rows([
        {"type": "agent_transition", "kind": "exec", "toAgentId": "agent-1", "modules": []},
        {"type": "agent_transition", "kind": "exec", "toAgentId": "agent-2", "state": "review", "modules": []},
        {"type": "agent_transition", "kind": "fsm", "toAgentId": "agent-3", "state": "test", "modules": []},
    ], "exec-no-profile")
    assert [r.detail for r in rows if r.kind == "handoff"] == [
        "Continued as agent-1.", "Continued in `review` as agent-2.", "Transitioned to `test` as agent-3."]
