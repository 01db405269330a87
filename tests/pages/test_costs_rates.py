"""Cost and tokens, rates and clocks (issue 20): tokens priced per model where the stream carries no
cost (marked estimated, the table overridable in settings), per slot and per model; the cached and
reasoning shares; each instance's spend; generated tokens/s pooled per model; calls per response
pooled; the runtime card's wall clock against maxRuntimeSecs, active and waiting time."""

from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import append
from runs.models import Run
from runs.pages import calls
from runs.pages.costs import agent_spend, run_costs
from runs.pages.overview import run_clocks, run_rates
from runs.stream.prices import price_tokens
from tests.pages_helpers import rows
from tests.streams import REAL_MOCK, import_stream, projection_dump

pytestmark = pytest.mark.django_db

CAPS = {"limits": {"maxRuntimeSecs": 100}, "agents": [
    {"id": "lead", "modelId": "anthropic/claude-sonnet-4"}, {"id": "worker", "modelId": "acme/small"}]}
ROOT_TOKENS = {"uncachedInput": 1_000_000, "cachedInput": 3_000_000, "output": 200_000, "reasoning": 50_000}


def at(seconds):
    return f"2026-08-03T10:{int(seconds) // 60:02d}:{seconds % 60:06.3f}Z"


def stream():
    w = {"agentId": "w1", "parentAgentId": "root"}
    return [
        {"type": "session_started", "timestamp": at(0), "capabilitySet": CAPS},
        {"type": "agent_spawned", "timestamp": at(0), "profileId": "lead", "modelId": "anthropic/claude-sonnet-4"},
        {"type": "turn_started", "timestamp": at(1)},
        {"type": "tool_call", "timestamp": at(1), "name": "spawn_subagent", "args": {}},
        {"type": "tool_call", "timestamp": at(1), "name": "read_file", "args": {}},
        {"type": "usage", "timestamp": at(2), "tokens": ROOT_TOKENS},  # no cost: priced
        {"type": "turn_timing", "timestamp": at(3), "promptMs": 5, "requestMs": 2000, "responseMs": 10},
        {**w, "type": "agent_spawned", "timestamp": at(5), "profileId": "worker", "modelId": "acme/small", "depth": 1},
        {**w, "type": "turn_started", "timestamp": at(6)},
        {**w, "type": "usage", "timestamp": at(7), "tokens": {"uncachedInput": 1000, "output": 300}, "cost": {"comparable": 0.5}},
        {**w, "type": "turn_timing", "timestamp": at(8), "requestMs": 1000},
        {**w, "type": "agent_returned", "timestamp": at(25), "summary": "done"},
        {"type": "agent_status", "timestamp": at(20), "status": "blocked", "waitingOn": "w1"},
        {"type": "agent_status", "timestamp": at(30), "status": "running"},
        {"type": "turn_started", "timestamp": at(31)},
        {"type": "usage", "timestamp": at(32), "tokens": {"output": 100_000}},  # no turn_timing: not pooled
        {"type": "session_ended", "timestamp": at(60), "status": "completed"},
    ]


@pytest.fixture
def run(settings):
    settings.GG_MODEL_PRICES = {"acme/*": {"input": 1.0, "cached": 0.5, "output": 2.0, "reasoning": 2.0}}
    run = Run.objects.create(name="costs-rates")
    append(run, stream())
    run.refresh_from_db()
    return run


def test_tokens_are_priced_per_class_from_the_table_and_settings_override_it(settings):
    assert price_tokens(ROOT_TOKENS, "anthropic/claude-sonnet-4") == pytest.approx(
        {"input": 3.0, "cached": 0.9, "output": 3.0, "reasoning": 0.75, "total": 7.65})
    assert price_tokens(ROOT_TOKENS, "nobody/knows") is None
    settings.GG_MODEL_PRICES = {"nobody/knows": {"input": 1.0, "output": 1.0}}
    priced = price_tokens(ROOT_TOKENS, "nobody/knows")
    assert priced["cached"] is None and priced["total"] == pytest.approx(1.0 + 0.2)


def test_the_cost_widget_prices_where_the_stream_carries_no_cost(run):
    costs = run_costs(run)
    slots = {(s["label"], s["model"]): s for s in costs["by_slot"]}
    lead, worker = slots[("lead", "anthropic/claude-sonnet-4")], slots[("worker", "acme/small")]
    assert lead["estimated"] and lead["cost"] == pytest.approx(7.65 + 1.5)  # both root turns, priced
    assert not worker["estimated"] and worker["cost"] == 0.5  # the stream's own figure
    assert costs["total"] == pytest.approx(9.65) and costs["estimated"]
    assert [m["model"] for m in costs["by_model"]] == ["anthropic/claude-sonnet-4", "acme/small"]
    classes = dict(costs["classes"])  # priced per model: acme's 1000 input at $1/M, 300 output at $2/M
    assert classes["input"] == pytest.approx(3.0 + 0.001) and classes["output"] == pytest.approx(4.5 + 0.0006)
    assert costs["shares"]["cached"] == pytest.approx(3_000_000 / 4_001_000)
    assert costs["shares"]["reasoning"] == pytest.approx(50_000 / 350_300)
    spends = {a.agent_id: agent_spend(a) for a in run.agents.all()}
    assert spends["root"]["estimated"] and spends["root"]["cost"] == pytest.approx(9.15)
    assert spends["w1"] == {"cost": 0.5, "estimated": False, "classes": pytest.approx(
        {"input": 0.001, "cached": None, "output": 0.0006, "reasoning": None, "total": 0.0016})}


def test_rates_pool_per_model_and_survive_a_rebuild(run):
    with CaptureQueriesContext(connection) as read:
        rates = run_rates(run)
    # Of each agent's timing only its pooling: its call times ("ms", "calls") were most of the JSON.
    timing = [q["sql"] for q in read.captured_queries if '"runs_agent"."timing"' in q["sql"]]
    assert timing and all("tp" in sql for sql in timing)
    assert rates["models"]["anthropic/claude-sonnet-4"] == {"tokens": 200_000, "ms": 2000, "turns": 1, "per_second": 100_000}
    assert rates["models"]["acme/small"]["per_second"] == pytest.approx(300)
    assert rates["throughput"]["per_second"] == pytest.approx(200_300 / 3)  # pooled, not a mean of 100k and 300
    assert rates["calls_per_response"] == pytest.approx(2 / 3)
    assert rates["throughput"]["tokens"] == calls.generated_throughput(run)["run"]["tokens"]  # the log's reading
    rebuild_projections(run)
    assert run_rates(run) == rates


def test_the_runtime_card_sets_active_time_beside_waiting(run):
    clocks = run_clocks(run, duration=run.ended_at - run.started_at)
    assert clocks["runtime"] == timedelta(seconds=60) and clocks["max_runtime"] == timedelta(seconds=100)
    assert clocks["runtime_share"] == pytest.approx(0.6)
    assert clocks["waiting"] == timedelta(seconds=10)
    # root works 0..60 less its 10 s blocked; w1 from 5 to 25
    assert clocks["active"] == timedelta(seconds=50 + 20)


def test_the_overview_and_agents_tab_mark_estimates(viewer_client, run):
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'id="cost-total" class="estimated"' in html and "$9.65" in html
    assert 'id="cached-share">75.0%<' in html and 'id="reasoning-share">14.3%<' in html
    assert dict(rows(html, "data-rate-model"))["anthropic/claude-sonnet-4"] == "anthropic/claude-sonnet-4 100000.0 1"
    assert 'id="clock-active">1m 10s<' in html and 'id="runtime-meter"' in html
    assert "calls per response" in html and 'id="calls-per-response">0.67<' in html
    agents = viewer_client.get(reverse("runs:agents", args=[run.pk])).content.decode()
    assert '<td class="num estimated" data-spend="root" title="estimated: priced from the model-price table">$9.15</td>' in agents
    assert '<td class="num" data-spend="w1">$0.5</td>' in agents


def test_tokens_per_second_per_model_pool_by_each_usage_records_model():
    # One agent bound to acme/small whose calls gg bills to two models: a turn served by acme/big,
    # and a turn whose compaction (summarised by acme/tiny, top of the turn) precedes its own call.
    run = Run.objects.create(name="rates-by-usage-model")
    append(run, [
        {"type": "agent_spawned", "timestamp": at(0), "profileId": "lead", "modelId": "acme/small"},
        {"type": "turn_started", "timestamp": at(1)},
        {"type": "usage", "timestamp": at(2), "modelId": "acme/big", "tokens": {"output": 600}},
        {"type": "turn_timing", "timestamp": at(3), "requestMs": 2000},
        {"type": "turn_started", "timestamp": at(4)},
        {"type": "usage", "timestamp": at(5), "modelId": "acme/tiny", "tokens": {"output": 50}},
        {"type": "usage", "timestamp": at(6), "modelId": "acme/small", "tokens": {"output": 300}},
        {"type": "turn_timing", "timestamp": at(7), "requestMs": 1000},
        {"type": "turn_started", "timestamp": at(8)},
        {"type": "usage", "timestamp": at(9), "tokens": {"output": 100}},  # names no model: the agent's
        {"type": "turn_timing", "timestamp": at(10), "requestMs": 1000},
    ])
    rates = run_rates(run)
    assert rates["models"]["acme/big"] == {"tokens": 600, "ms": 2000, "turns": 1, "per_second": 300}
    assert rates["models"]["acme/small"] == {"tokens": 400, "ms": 2000, "turns": 2, "per_second": 200}
    assert "acme/tiny" not in rates["models"]  # generated, but no model time of its own: no rate to state
    assert rates["throughput"]["tokens"] == 1050 and rates["throughput"]["ms"] == 4000
    rebuild_projections(run)
    assert run_rates(run) == rates


def test_usage_naming_no_slot_is_the_summarys_one_slot(viewer_client):
    """gg's recorded mock session (an older stream): its usage deltas name no profile or model, and
    its session summary names one slot, primary on mock/echo, whose spend they were."""
    run, _ = import_stream(REAL_MOCK)
    slots = run_costs(run)["by_slot"]
    assert [(s["label"], s["model"], s["cost"]) for s in slots] == [("primary", "mock/echo", 0.0063)]
    assert Run.objects.get(pk=run.pk).usage["by_slot"]["primary|mock/echo"]["deltas"] == 2
    page = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-slot="primary|mock/echo"' in page and "No price for" not in page  # mock/* is priced at 0
    before = projection_dump(run)
    rebuild_projections(run)
    assert projection_dump(run) == before


def test_usage_naming_no_slot_stays_unnamed_beside_two_slots(viewer_client):
    two = [{"slot": "a", "modelId": "m/a"}, {"slot": "b", "modelId": "m/b"}]
    run = Run.objects.create(name="two-slots")
    append(run, [{"type": "session_started"}, {"type": "usage", "tokens": {"output": 5}},
                 {"type": "session_summary", "summary": {"slotCosts": two}}])
    assert [(s["label"], s["model"]) for s in run_costs(run)["by_slot"]] == [("—", "")]
    page = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert "No price for usage naming no model:" in page
