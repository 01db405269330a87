"""Inspecting every step, the arithmetic: latency from the stored stamps, tokens per second
pooled over model time, and the feed footer's count. (Each page's own test is tests/pages/test_<page>.py.)"""

import json
import re

import pytest
from django.urls import reverse

from runs.feed.rows import PANEL_KINDS
from runs.stream import call_times
from runs.stream.record import parse_timestamp
from runs.models import Event
from runs.pages import calls
from runs.pages.report import build_report
from runs.ingest.writer import append
from runs.templatetags.inspect import ms
from tests.ingest_helpers import new_run
from tests.pages_helpers import authored, rows

pytestmark = pytest.mark.django_db


def test_latency_is_the_difference_of_the_stored_stamps():
    run = authored()
    halves = list(Event.objects.filter(run=run, type__in=calls.CALL_TYPES).order_by("seq"))
    expected = {}
    for e in halves:
        if e.type == "api_call":
            result = next(r for r in halves if r.seq > e.seq and r.type == "api_result" and r.operation == e.operation)
            expected.setdefault(e.operation, []).append(
                (parse_timestamp(result.timestamp) - parse_timestamp(e.timestamp)).total_seconds() * 1000)
    table = {r["name"]: r for r in calls.latency_table(calls.pair_calls(calls.call_rows(run, agent_id="root")))}
    assert table["files.read_file"]["p50_ms"] == pytest.approx(expected["files.read_file"][0]) == pytest.approx(12)
    assert table["shell.shell"]["failures"] == 1 and table["shell.shell"]["failure_rate"] == 1
    spawn = table["delegation.spawn_subagent"]["p95_ms"]
    assert spawn == pytest.approx(expected["delegation.spawn_subagent"][0])
    report = build_report(run)
    root = next(a for a in report["agents"] if a["agentId"] == "root")
    assert {r["name"]: r["p50Ms"] for r in root["latency"]}["files.read_file"] == pytest.approx(12)
    scout = next(a for a in report["agents"] if a["agentId"] == "agent-0")
    assert {r["name"]: (r["count"], r["failures"]) for r in scout["latency"]} == {"list_dir": (1, 0), "shell": (1, 1)}


def test_tokens_per_second_pool_generated_tokens_over_model_time():
    run = authored()
    pooled = calls.generated_throughput(run)
    # 40+60+80+20 (root) + 25+25 (scout) tokens over 500+300+1000+200 + 250+250 ms: 100 tokens/s,
    # where a mean of the six per-call rates would say 110.
    assert (pooled["run"]["tokens"], pooled["run"]["ms"]) == (250, 2500)
    assert pooled["run"]["per_second"] == pytest.approx(100)
    assert pooled["agents"]["agent-0"]["per_second"] == pytest.approx(100)
    assert pooled["agents"]["root"]["per_second"] == pytest.approx(200 / 2.0)
    assert build_report(run)["run"]["generatedTokensPerSecond"] == pytest.approx(100)


def test_the_rates_card_says_when_no_turn_reported_model_time(viewer_client):
    """A scripted run (no model delays) reports no time inside model calls: the card says so rather
    than "pooled over 0.0 ms"."""
    timed, untimed = authored(), new_run()
    append(untimed, [{"type": "usage", "agentId": "root", "turn": 1, "tokens": {"output": 10}},
                     {"type": "turn_timing", "agentId": "root", "turn": 1, "requestMs": 0}])
    card = viewer_client.get(reverse("runs:detail", args=(timed.pk,))).content.decode()
    assert "pooled over 2.5" in card and "no turn reported time" not in card
    card = viewer_client.get(reverse("runs:detail", args=(untimed.pk,))).content.decode()
    assert "no turn reported time inside a model call" in card and "pooled over" not in card


def test_the_feed_footer_counts_the_records_its_rows_stand_for(viewer_client):
    run = authored()
    html = viewer_client.get(reverse("runs:feed", args=(run.pk,))).content.decode()
    panel = Event.objects.filter(run=run, type__in=PANEL_KINDS).count()
    footer = re.search(r'id="feed-count"[^>]*>(.*?)</p>', html, re.S)[1]
    assert f"{run.last_seq - panel} of the run" in footer and f"{run.last_seq} stored records" in footer
    assert f"the other {panel} drive the panels" in footer and 'href="?kind=raw"' in footer
    raw = viewer_client.get(reverse("runs:feed_rows", args=(run.pk,)) + "?kind=raw&after=0").json()
    assert raw["rows"] == run.last_seq  # the raw kind: one row per stored record


def test_pooling_an_agents_open_turn_leaves_its_stored_timing_as_it_was():
    tp = {"turn": 2, "out": 30, "ms": 300, "tokens": 100, "modelMs": 1000, "turns": 1, "outs": {"m": 20, "n": 10},
          "model": "m", "models": {"m": [100, 1000, 1]}}
    timing = {"tp": tp}
    stored = json.loads(json.dumps(timing))
    for _ in range(2):  # the open turn counted each time, never folded in
        assert call_times.pooled(timing) == {"tokens": 130, "ms": 1300, "turns": 2}
        assert call_times.pools(timing, "m")[1] == {"m": {"tokens": 120, "ms": 1300, "turns": 2},
                                                     "n": {"tokens": 10, "ms": 0, "turns": 0}}
        assert call_times.pools(timing, "m")[0] == call_times.pooled(timing)
    assert timing == stored


def test_times_past_a_minute_read_as_durations():
    """Milliseconds as an operator reads them: a pooled model time of hours is not '10303.47 s'."""
    assert [ms(v) for v in (0.3, 49.754, 12_300, 59_999, 60_000, 10_303_470, float("nan"), None)] == [
        "0.3 ms", "49.8 ms", "12.30 s", "60.00 s", "1m 00s", "2h 51m", "—", "—"]
