"""The fold, fixture by fixture: each authored stream projects to exactly what spec/stream.md says."""

import json
from datetime import datetime, timedelta, timezone
from decimal import Decimal

import pytest

from runs.models import Agent, Event, Holding, ModuleStore
from runs.stream.vocabulary import GG_TYPES
from tests.streams import STREAMS, import_stream

pytestmark = pytest.mark.django_db

SCHEMAS = STREAMS.parent.parent.parent.parent / "shared" / "fixtures" / "gg"


def agents_of(run):
    return {a.agent_id: a for a in Agent.objects.filter(run=run).select_related("parent", "predecessor")}


def holdings_of(agent):
    return [
        (h.kind, h.module_id, h.store.module_id if h.store else None, h.enabled, h.origin, h.scope)
        for h in Holding.objects.filter(agent=agent).select_related("store").order_by("position")
    ]


def holders(run):
    out = {}
    for s in ModuleStore.objects.filter(run=run):
        out[s.module_id] = sorted(h.agent.agent_id for h in s.holdings.select_related("agent"))
    return out


# --- the authored fixtures themselves --------------------------------------------------------


def test_the_fixtures_cover_every_event_type_of_the_newest_schema():
    schema = json.loads((SCHEMAS / "telemetry-event.schema.json").read_text())
    schema_types = {o["properties"]["type"]["enum"][0] if "enum" in o["properties"]["type"] else o["properties"]["type"]["const"] for o in schema["oneOf"]}
    assert schema_types == GG_TYPES and len(schema_types) == 40
    seen = set()
    for path in STREAMS.glob("*.ndjson"):
        for line in path.read_text().splitlines():
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict):
                seen.add(rec.get("type"))
    assert GG_TYPES <= seen
    multi = {json.loads(line)["type"] for line in (STREAMS / "multi_agent.ndjson").read_text().splitlines()}
    assert multi == GG_TYPES  # the multi-agent run alone carries all 40


def test_multi_agent_fixture_is_valid_against_gg_schemas():
    from jsonschema import Draft202012Validator
    from referencing import Registry, Resource

    schemas = [json.loads(p.read_text()) for p in SCHEMAS.glob("*.schema.json")]
    registry = Registry().with_resources([(s["$id"], Resource.from_contents(s)) for s in schemas])
    by_id = {s["$id"].rsplit("/", 1)[-1]: s for s in schemas}
    validator = Draft202012Validator(by_id["telemetry-event.schema.json"], registry=registry)
    capabilities = Draft202012Validator(by_id["capability-set.schema.json"], registry=registry)
    lines = (STREAMS / "multi_agent.ndjson").read_text().splitlines()
    assert len(lines) == 248
    for number, line in enumerate(lines, 1):
        record = json.loads(line)
        errors = [e.message for e in validator.iter_errors(record)]
        assert errors == [], f"line {number} ({record['type']})"
        if record["type"] == "session_started":
            assert [e.message for e in capabilities.iter_errors(record["capabilitySet"])] == []


# --- multi_agent.ndjson ----------------------------------------------------------------------


@pytest.fixture
def multi():
    run, result = import_stream(STREAMS / "multi_agent.ndjson", "demo")
    assert (result.stored, result.rejected) == (248, 0)
    return run


def test_multi_agent_tree_and_successions(multi):
    agents = agents_of(multi)
    assert list(agents) == ["root", "agent-0", "agent-1", "agent-2", "agent-3", "agent-4", "agent-5"]
    parent = {k: (a.parent.agent_id if a.parent else None) for k, a in agents.items()}
    assert parent == {
        "root": None, "agent-0": "root", "agent-1": "root", "agent-2": "agent-1", "agent-3": "agent-1",
        "agent-4": "root", "agent-5": "agent-4",
    }  # fmt: skip
    succession = {k: (a.predecessor.agent_id if a.predecessor else None, a.transition_kind) for k, a in agents.items()}
    assert succession == {
        "root": (None, ""), "agent-0": (None, ""), "agent-1": (None, ""),
        "agent-2": ("agent-1", "fork"), "agent-3": ("agent-1", "exec"),
        "agent-4": (None, ""), "agent-5": ("agent-4", "fsm"),
    }  # fmt: skip
    assert [m["disposition"] for m in agents["agent-2"].transition_modules][:3] == ["copied", "linked", "copied"]
    assert agents["agent-3"].transition_modules[1] == {
        "kind": "memories", "disposition": "carried", "fromModuleId": "memories-0", "toModuleId": "memories-0",
    }  # fmt: skip
    assert (agents["agent-4"].fsm_id, agents["agent-4"].fsm_state) == ("review-flow", "draft")
    assert (agents["agent-5"].fsm_id, agents["agent-5"].fsm_state) == ("review-flow", "review")
    assert {k: a.depth for k, a in agents.items()} == {
        "root": 0, "agent-0": 1, "agent-1": 1, "agent-2": 2, "agent-3": 1, "agent-4": 1, "agent-5": 1,
    }  # fmt: skip
    assert agents["agent-0"].brief == "Write the client."
    assert (agents["agent-4"].worktree, agents["agent-4"].issue_id) == ("gg/issue-1", "DEMO-1")
    assert agents["root"].cwd == "/work/demo"


def test_multi_agent_surfaces_arms_and_roles(multi):
    agents = agents_of(multi)
    arms = {k: (a.execution_mode, a.program_language, a.doc_view_types, a.role) for k, a in agents.items()}
    assert arms == {
        "root": ("responses_as_code", "python", "return+parameters+errors", "standard"),
        "agent-0": ("responses_as_code", "typescript", "return+errors", "standard"),
        "agent-1": ("responses_as_code", "rust", "return", "standard"),
        "agent-2": ("responses_as_code", "rust", "return", "standard"),
        "agent-3": ("responses_as_code", "java", "none", "standard"),
        "agent-4": ("tool_calling", "", "", "standard"),
        "agent-5": ("tool_calling", "", "", "review"),
    }
    assert all(a.surface_reported for a in agents.values())
    assert agents["agent-5"].tools == ["read_file", "approve", "request_changes"] and agents["agent-5"].apis == []
    assert agents["root"].tools == [] and agents["root"].apis[0]["path"] == "gg.files"
    assert agents["agent-1"].apis[0]["path"] == "gg::files"
    assert agents["agent-3"].apis[0]["path"] == "gg.files.Files"


def test_multi_agent_holdings_and_stores(multi):
    agents = agents_of(multi)
    assert holdings_of(agents["root"]) == [
        ("history", "history-0", "history-0", True, "created", ""),
        ("memories", "memories-0", "memories-0", True, "run", "shared"),
        ("tasks", "tasks-0", "tasks-0", True, "created", ""),
        ("board", "board-0", "board-0", True, "run", ""),
        ("skills", "skills-0", "skills-0", True, "profile", ""),
        ("archive", "archive-0", "archive-0", True, "created", ""),
    ]
    # the inherited-fallback case: declared scope inherited, resolved origin created, its own store
    assert holdings_of(agents["agent-0"]) == [
        ("history", "history-1", "history-1", True, "created", ""),
        ("memories", "memories-1", "memories-1", True, "created", "inherited"),
        ("tasks", "", None, False, "created", ""),
        ("board", "", None, False, "created", ""),
        ("skills", "", None, False, "created", ""),
        ("archive", "", None, False, "created", ""),
    ]
    assert Holding.objects.filter(agent__run=multi).count() == 7 * 6  # disabled kinds included
    assert holders(multi) == {
        "archive-0": ["root"],
        "board-0": ["agent-4", "agent-5", "root"],
        "history-0": ["root"],
        "history-1": ["agent-0"],
        "history-2": ["agent-1", "agent-3"],
        "history-3": ["agent-2"],
        "history-4": ["agent-4", "agent-5"],
        "memories-0": ["agent-1", "agent-2", "agent-3", "root"],  # the shared store, shown once
        "memories-1": ["agent-0"],
        "skills-0": ["root"],
        "tasks-0": ["root"],
        "tasks-1": ["agent-1"],
        "tasks-2": ["agent-2"],
    }
    stores = {s.module_id: s for s in ModuleStore.objects.filter(run=multi)}
    assert {m: s.kind for m, s in stores.items() if m.startswith("memories")} == {"memories-0": "memories", "memories-1": "memories"}
    # latest snapshot naming the store wins, whoever emitted it
    mem = stores["memories-0"]
    assert mem.snapshot_type == "memory_state"
    assert [m["name"] for m in mem.snapshot["memories"]] == ["plan", "core-api"]
    assert Event.objects.get(run=multi, seq=mem.snapshot_seq).agent_id == "agent-1"
    assert [t["status"] for t in stores["tasks-0"].snapshot["tasks"]] == ["done", "done"]
    assert stores["board-0"].snapshot["issues"][0]["id"] == "DEMO-1"
    assert stores["archive-0"].snapshot["count"] == 1
    assert stores["skills-0"].snapshot_type == "skills_state"
    assert stores["history-0"].snapshot is None  # history has no snapshot event


def test_multi_agent_counts_failures_and_errors(multi):
    agents = agents_of(multi)
    assert {k: a.turns for k, a in agents.items()} == {
        "root": 2, "agent-0": 3, "agent-1": 1, "agent-2": 2, "agent-3": 1, "agent-4": 1, "agent-5": 1,
    }  # fmt: skip
    assert multi.turn_count == 11
    assert agents["root"].api_calls == {
        "docs.search": 1, "tasks.add_task": 2, "memories.write_memory": 1, "programs.history": 2,
        "delegation.spawn_subagent": 3, "delegation.wait_for_subagents": 1, "board.create_issue": 1,
        "tasks.complete_task": 1, "context.archive_thread": 1, "views.open_file": 1, "session.finish": 1,
    }  # fmt: skip
    assert agents["agent-0"].api_calls == {
        "memories.read_memory": 1, "files.write_file": 1, "session.approve": 2, "views.open_text": 1, "session.finish": 1,
    }  # fmt: skip
    assert agents["agent-3"].api_calls["shell.shell"] == 1
    assert agents["agent-4"].tool_calls == {"write_file": 1, "edit_file": 1, "shell": 1, "finish": 1}
    assert agents["agent-5"].tool_calls == {"read_file": 1, "approve": 1}
    assert multi.call_count == 42
    # refused calls (unavailable) are calls the model made, with their failure class
    assert agents["root"].api_failures == {"unavailable": 2}
    assert agents["agent-0"].api_failures == {"not-found": 1, "unavailable": 2}
    assert agents["agent-4"].tool_failures == {"not-found": 1, "limit-exceeded": 1}
    # tools and APIs kept apart, never summed
    assert multi.api_failures == {"unavailable": 4, "not-found": 4}
    assert multi.tool_failures == {"not-found": 1, "limit-exceeded": 1}
    assert agents["agent-0"].error_turns == {"model_api": 1, "transpile": 1}
    assert agents["agent-2"].error_turns == {"program_fault": 2} and agents["agent-2"].error_turn_count == 2
    assert multi.error_turns == {"model_api": 1, "transpile": 1, "program_fault": 2}
    assert multi.error_turn_count == 4
    # errorType kept under its kind, per agent and per run
    assert agents["agent-0"].error_types == {"model_api": {"model_length_capped": 1}, "transpile": {"transpile_syntax": 1}}
    assert multi.error_types == {"model_api": {"model_length_capped": 1}, "transpile": {"transpile_syntax": 1},
                                 "program_fault": {"program_throw": 2}}
    assert agents["root"].error_types == {}
    assert all(a.open_api_calls == 0 for a in agents.values())


def test_multi_agent_usage(multi):
    usage = multi.usage
    assert usage["deltas"] == 11
    assert usage["tokens"] == {"uncachedInput": 9200, "cachedInput": 6700, "output": 7056, "reasoning": 100}
    assert Decimal(str(usage["cost"]["comparable"])) == Decimal("0.0425")
    by_slot = usage["by_slot"]
    assert set(by_slot) == {
        "lead|vendor/big", "ts-coder|vendor/small", "rust-coder|vendor/small", "java-coder|vendor/small",
        "drafter|vendor/mini", "reviewer|vendor/mini",
    }  # fmt: skip
    assert by_slot["lead|vendor/big"]["tokens"] == {"uncachedInput": 3000, "cachedInput": 3000, "output": 720, "reasoning": 100}
    # a class no delta reported stays null, never a misleading 0
    assert by_slot["drafter|vendor/mini"]["tokens"]["cachedInput"] is None
    # slot_usage rollups are kept apart (latest per key) and agree with the deltas here
    assert set(multi.slot_usage) == set(by_slot)
    for key, rollup in multi.slot_usage.items():
        assert rollup["tokens"] == by_slot[key]["tokens"]
    agents = agents_of(multi)
    assert agents["agent-2"].usage["tokens"]["uncachedInput"] == 1400 and agents["agent-2"].usage["deltas"] == 2
    assert agents["root"].usage["deltas"] == 2  # slot_usage is not credited to root


def test_multi_agent_statuses(multi):
    agents = agents_of(multi)
    assert multi.status == "completed"
    assert multi.capability_set["agents"][0]["slug"] == "lead"
    assert multi.summary["agentsSpawned"] == 7
    assert {k: a.status for k, a in agents.items()} == {
        "root": "done",  # running/blocked at session_ended -> done (completed is not a failure)
        "agent-0": "done",  # agent_returned
        "agent-1": "done",  # handed on; reconciled at session_ended
        "agent-2": "failed",  # stopped on its ceiling
        "agent-3": "done",
        "agent-4": "done",
        "agent-5": "done",
    }
    assert agents["agent-3"].returned == "core ported to Java"
    # root waited on its subagents: blocked at 10:00:06.850, running again at 10:00:23.427
    assert agents["root"].suspended == timedelta(seconds=16.577) and agents["root"].blocked_since is None
    assert all(a.suspended == timedelta(0) for k, a in agents.items() if k != "root")


def test_multi_agent_context_bands_and_latest_breakdown(multi):
    agents = agents_of(multi)
    # every band summed over the agent's three turns; empty bands left out
    assert agents["agent-0"].context_bands == {"system": 3420, "user_prompt": 900, "memory": 80}
    assert agents["root"].context_bands == {"system": 6060, "user_prompt": 300, "memory": 80, "task_list": 60}
    assert agents["root"].last_breakdown == {"bands": {"system": 4260, "memory": 80, "task_list": 60},
                                             "totalTokens": 4400, "windowLimit": 200000, "fullness": 0.022}


def test_multi_agent_event_columns(multi):
    ev = list(Event.objects.filter(run=multi, agent_id="agent-0").order_by("seq").values_list("type", "turn"))
    assert ev[0] == ("agent_spawned", None)
    first_turn = ev.index(("turn_started", 1))
    assert all(t is None for _, t in ev[:first_turn])
    assert ev[-1] == ("agent_returned", 3)
    refused = Event.objects.filter(run=multi, type="api_result", failure="unavailable")
    assert refused.count() == 4 and set(refused.values_list("ok", flat=True)) == {False}
    assert set(refused.values_list("operation", flat=True)) == {"programs.history", "session.approve"}


# --- legacy.ndjson ---------------------------------------------------------------------------


def test_legacy_shapes_project(django_assert_max_num_queries):
    run, result = import_stream(STREAMS / "legacy.ndjson")
    assert (result.stored, result.rejected) == (37, 0)
    agents = agents_of(run)
    assert list(agents) == ["root", "agent-0", "agent-1"]
    root = agents["root"]
    # profile from the older `slot`
    assert (root.profile_id, root.model_id) == ("primary", "vendor/old")
    # {object, function} calls: keyed object.function unless an operation is given
    assert root.api_calls == {"fs.readFile": 1, "memories.write_memory": 1}
    # program calls bridged as tool pairs inside the bracket count under their tools too, as gg
    # counts them (issue 20, item 10), joined to the call whose bracket holds them; the run counts once
    assert root.tool_calls == {"read_file": 1, "write_memory": 1} and root.tool_failures == {"not-found": 1}
    assert root.api_tools == {"fs.readFile": {"read_file": 1}, "memories.write_memory": {"write_memory": 1}}
    assert root.call_count == 2 and (root.open_api_calls, root.open_api_call) == (0, "")
    assert root.api_failures == {"not-found": 1}
    assert Event.objects.filter(run=run, type="tool_call", agent_id="root").count() == 2  # still stored
    assert run.call_count == 3  # 2 api calls + agent-1's shell
    # mid-era roster: ownership kept; mid-era surface: withheld, docViewTypes word
    assert [(h.kind, h.ownership, h.enabled) for h in Holding.objects.filter(agent=root).order_by("position")] == [
        ("history", "owned", True), ("memories", "owned", True), ("tasks", "unowned", False),
    ]  # fmt: skip
    assert root.withheld == ["shell"] and root.doc_view_types == "return-and-parameters"
    assert root.role == "standard"
    # fsm_state {machine, state, stateIndex} and {fsm, agent}; transition `agent` names the profile
    a0, a1 = agents["agent-0"], agents["agent-1"]
    assert (a0.fsm_id, a0.fsm_state, a0.profile_id) == ("tdd", "test", "tester")
    assert (a1.fsm_id, a1.fsm_state, a1.profile_id) == ("tdd", "implement", "implementer")
    assert (a0.predecessor_id, a0.transition_kind) == (root.pk, "fsm")
    assert a1.predecessor_id == a0.pk and a1.parent_id == a0.pk
    # a snapshot naming no store: the synthesized legacy:<agent>:<kind> store
    store = ModuleStore.objects.get(run=run, module_id="legacy:agent-1:tasks")
    assert store.kind == "tasks" and store.snapshot["tasks"][0]["id"] == "t1"
    assert ModuleStore.objects.get(run=run, module_id="board-0").snapshot["issues"][0]["agent"] == "Implementer"
    # removed kinds are stored, never an error
    assert set(Event.objects.filter(run=run, type__in=["planning", "speculation", "workflow_stage"]).values_list("type", flat=True)) == {
        "planning", "speculation", "workflow_stage"
    }
    # usage with `slot` (and no modelId): keyed by slot, the agent's model filling in
    assert set(run.usage["by_slot"]) == {"primary|vendor/old", "implementer|"}
    assert run.usage["tokens"] == {"uncachedInput": 1300, "cachedInput": 50, "output": 260, "reasoning": None}
    assert run.slot_usage == {
        "primary|vendor/old": {"profileId": "primary", "modelId": "vendor/old",
                               "tokens": {"uncachedInput": 1000, "cachedInput": None, "output": 200, "reasoning": None},
                               "cost": {"comparable": 0.003, "actual": 0.003}},
    }  # fmt: skip
    assert run.error_turns == {"missing_completion": 1} and run.tool_failures == {"not-found": 1, "other": 1}
    # a failure status: still-running agents become failed
    assert run.status == "model_error"
    assert {a.status for a in agents.values()} == {"failed"}
    assert run.capability_set is None  # older session_started carries none


# --- edge cases of ordering ------------------------------------------------------------------


def test_agent_first_seen_through_a_status_is_a_placeholder_then_filled():
    from runs.ingest import writer as ingest
    from runs.models import Run

    run = Run.objects.create(name="order")
    ingest.append(run, [{"type": "agent_status", "agentId": "agent-7", "parentAgentId": "agent-6", "status": "blocked"}])
    a7 = Agent.objects.get(run=run, agent_id="agent-7")
    assert (a7.status, a7.profile_id, a7.parent_agent_id, a7.parent_id) == ("blocked", "", "agent-6", None)
    # the parent arrives in a later append: the child is linked to it
    ingest.append(run, [{"type": "agent_spawned", "agentId": "agent-6", "profileId": "p", "modelId": "m", "depth": 1, "cwd": "/"}])
    a7.refresh_from_db()
    assert a7.parent.agent_id == "agent-6"
    ingest.append(run, [{"type": "agent_spawned", "agentId": "agent-7", "parentAgentId": "agent-6", "profileId": "q", "modelId": "m", "depth": 2, "cwd": "/"}])
    a7.refresh_from_db()
    assert (a7.profile_id, a7.depth, a7.status) == ("q", 2, "blocked")


def test_state_snapshot_before_the_roster_naming_its_store():
    from runs.ingest import writer as ingest
    from runs.models import Run

    run = Run.objects.create(name="early-state")
    ingest.append(run, [{"type": "tasks_state", "agentId": "a", "moduleId": "tasks-3", "tasks": [{"id": "x"}]}])
    store = ModuleStore.objects.get(run=run, module_id="tasks-3")
    assert store.kind == "tasks" and store.snapshot["tasks"] == [{"id": "x"}] and not store.holdings.exists()
    ingest.append(run, [{"type": "agent_modules", "agentId": "a", "modules": [
        {"kind": "history", "moduleId": "history-0", "enabled": True, "origin": "created", "writable": True},
        {"kind": "tasks", "moduleId": "tasks-3", "enabled": True, "origin": "created", "writable": True}]}])  # fmt: skip
    store.refresh_from_db()
    assert [h.agent.agent_id for h in store.holdings.all()] == ["a"]
    assert store.snapshot["tasks"] == [{"id": "x"}]  # the snapshot that arrived first is kept
    assert ModuleStore.objects.filter(run=run).count() == 2


def test_failed_result_without_a_class_is_unclassified_and_reviewer_apis_make_a_review_role():
    from runs.ingest import writer as ingest
    from runs.models import Run

    run = Run.objects.create(name="odd")
    ingest.append(run, [
        {"type": "agent_surface", "agentId": "r", "executionMode": "responses_as_code", "tools": [],
         "apis": [{"module": "session", "path": "gg.session", "description": "", "functions": [
             {"name": "approve", "operation": "session.approve"}, {"name": "requestChanges", "operation": "session.request_changes"}]}]},
        {"type": "agent_surface", "agentId": "j", "executionMode": "tool_calling", "tools": ["read_file", "select_winner"]},
        {"type": "tool_call", "agentId": "j", "name": "read_file", "args": {}},
        {"type": "tool_result", "agentId": "j", "name": "read_file", "ok": False},
        {"type": "turn_outcome", "agentId": "j", "outcome": "fatal", "consecutiveErrors": 0, "turns": 1},
    ])  # fmt: skip
    agents = agents_of(run)
    assert agents["r"].role == "review" and agents["j"].role == "judge"
    assert agents["j"].tool_failures == {"unclassified": 1}
    assert agents["j"].error_turns == {"fatal": 1}


def test_suspensions_close_at_the_next_status_and_at_session_end():
    from runs.ingest import writer as ingest
    from runs.models import Run

    def at(second, **rec):
        return {"timestamp": f"2026-08-03T10:00:{second:02d}.250000000Z", **rec}

    run = Run.objects.create(name="clocks")
    ingest.append(run, [
        at(0, type="agent_status", agentId="a", status="blocked", waitingOn="issue AUTH-1.0"),
        at(2, type="agent_status", agentId="a", status="blocked"),  # still the same suspension
        at(5, type="agent_status", agentId="a", status="running"),
        at(7, type="agent_status", agentId="b", status="blocked"),
        at(9, type="agent_returned", agentId="b", summary="done"),  # returned: done, no longer waiting
        at(10, type="agent_status", agentId="a", status="blocked"),
        at(11, type="agent_status", agentId="c", status="blocked"),
        at(8, type="agent_status", agentId="c", status="running"),  # a stamp out of order counts 0, never less
    ])  # fmt: skip
    agents = agents_of(run)
    assert agents["a"].suspended == timedelta(seconds=5) and agents["b"].suspended == timedelta(seconds=2)
    assert agents["c"].suspended == timedelta(0)
    # a is blocked now: its open suspension is stamped, not yet counted
    assert agents["a"].blocked_since == datetime(2026, 8, 3, 10, 0, 10, 250000, tzinfo=timezone.utc)
    ingest.append(run, [at(14, type="session_ended", status="completed")])
    agents = agents_of(run)
    assert (agents["a"].status, agents["a"].suspended, agents["a"].blocked_since) == ("done", timedelta(seconds=9), None)
    assert agents["b"].suspended == timedelta(seconds=2)


def test_error_types_and_context_bands_of_odd_records():
    from runs.ingest import writer as ingest
    from runs.models import Run

    run = Run.objects.create(name="odd-context")
    ingest.append(run, [
        {"type": "turn_outcome", "agentId": "a", "outcome": "error", "error": "model_api", "errorType": "model_timeout"},
        {"type": "turn_outcome", "agentId": "a", "outcome": "error", "error": "model_api"},  # older: no type
        {"type": "turn_outcome", "agentId": "a", "outcome": "error", "error": "model_api", "errorType": "model_timeout"},
        {"type": "context_breakdown", "agentId": "a", "bySource": [
            {"source": "docs_view", "tokens": 10}, {"source": "docs_view", "tokens": 5}, {"source": "board", "tokens": 7},
            {"source": "memory", "tokens": "many"}, {"source": "skill", "tokens": True}, "junk"]},
        {"type": "context_breakdown", "agentId": "a", "bySource": [{"source": "docs_view", "tokens": 1}], "totalTokens": 90,
         "windowLimit": 100, "fullness": 0.9},
    ])  # fmt: skip
    a = agents_of(run)["a"]
    assert a.error_turns == {"model_api": 3} and a.error_types == {"model_api": {"model_timeout": 2}}
    # a band listed twice is summed; legacy bands kept; non-numbers dropped; no totalTokens: the bands' sum
    assert a.context_bands == {"docs_view": 16, "board": 7}
    assert a.last_breakdown == {"bands": {"docs_view": 1}, "totalTokens": 90, "windowLimit": 100, "fullness": 0.9}
