"""Errors as gg's console shows them (issue 20, "Errors"): the turn error types ranked with gg's labels
under their base kind, the longest failing streak any one agent reached, and the loop aborts — on the
overview, the agent page and in the report, from projections the fold keeps (incremental == rebuilt).
Streams authored here, after gg's own reducer tests (ggErrors.test.ts)."""

import json

import pytest
from django.urls import reverse

from runs.ingest import rebuild
from runs.ingest.writer import append
from runs.models import Agent, Run
from runs.pages.report import build_report
from runs.stream.vocabulary import TURN_ERROR_TYPES
from tests.paths import GG_FIXTURES
from tests.streams import projection_dump

pytestmark = pytest.mark.django_db


def outcome(agent, turns, streak, error=None, error_type=None, **extra):
    rec = {"agentId": agent, "type": "turn_outcome", "outcome": "error" if error else "progressed",
           "consecutiveErrors": streak, "turns": turns, **extra}
    if error:
        rec.update(error=error, errorType=error_type)
    return rec


STREAM = [
    {"type": "session_started"},
    # two agents failing three times each did not fail six times in a row
    outcome("root", 1, 1, "program_fault", "program_api_error"),
    outcome("agent-1", 1, 1, "transpile", "transpile_syntax"),
    outcome("root", 2, 2, "program_fault", "program_api_error"),
    outcome("agent-1", 2, 2, "transpile", "transpile_syntax"),
    outcome("root", 3, 3, "program_fault", "program_api_error"),
    outcome("agent-1", 3, 0),
    outcome("agent-1", 4, 1, "sandbox_limit", "sandbox_timeout"),
    outcome("root", 4, 1, "model_api", "model_something_new"),  # a type from a newer gg: kept, kind unknown
    # discarded looping replies are counted, not charged as errors
    outcome("root", 5, 0, loopAborts=3, loopAbortWords=9195, loopAbortChars=58400),
    outcome("agent-1", 5, 0, loopAborts=1, loopAbortWords=5, loopAbortChars=40),
]


def stored():
    run = Run.objects.create(name="errors")
    for i in range(0, len(STREAM), 4):  # chunk boundaries must not matter
        append(run, STREAM[i:i + 4])
    incremental = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == incremental
    return Run.objects.get(pk=run.pk)


def test_the_fold_keeps_the_streak_peak_and_the_loop_aborts():
    run = stored()
    assert run.error_facts == {"maxConsecutive": 3, "loopAborts": 4, "loopAbortWords": 9200, "loopAbortChars": 58440}
    agents = {a.agent_id: a for a in Agent.objects.filter(run=run)}
    assert agents["agent-1"].error_facts == {"maxConsecutive": 2, "loopAborts": 1, "loopAbortWords": 5,
                                             "loopAbortChars": 40}
    assert run.error_turn_count == 7  # the aborts are not errors


def test_the_report_ranks_the_types_with_gg_labels_under_their_base_kind():
    doc = build_report(stored())
    errors = doc["run"]["errors"]
    assert errors["topTypes"] == [
        {"id": "program_api_error", "label": "uncaught call failure", "kind": "program_fault", "count": 3},
        {"id": "transpile_syntax", "label": "syntax error", "kind": "transpile", "count": 2},
        # a tie broken by label, so a live run's ranking does not shuffle
        {"id": "sandbox_timeout", "label": "execution timeout", "kind": "sandbox_limit", "count": 1},
        {"id": "model_something_new", "label": "model something new", "kind": None, "count": 1},
    ]
    assert (errors["maxConsecutive"], errors["loopAborts"], errors["loopAbortWords"], errors["loopAbortChars"]) == (
        3, 4, 9200, 58440)
    agent = {a["agentId"]: a for a in doc["agents"]}["agent-1"]["errors"]
    assert [t["id"] for t in agent["topTypes"]] == ["transpile_syntax", "sandbox_timeout"]
    assert agent["maxConsecutive"] == 2


def test_the_overview_and_the_agent_page_show_them(viewer_client):
    run = stored()
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-ranked-type="program_api_error" title="program_api_error">uncaught call failure' in html
    assert 'data-base-kind="program_fault">program_fault</span> <b>3×</b>' in html
    assert 'data-base-kind="unknown">unknown</span>' in html
    assert "3 turns in a row (the most any one agent reached)" in html
    assert "4 replies discarded · 9200 words · 58440 chars" in html
    html = viewer_client.get(reverse("runs:agent", args=[run.pk, "agent-1"])).content.decode()
    assert '<dd id="max-consecutive">2 turns in a row</dd>' in html
    assert "1 reply discarded · 5 words · 40 chars" in html
    empty = Run.objects.create(name="no-errors")
    append(empty, [{"type": "session_started"}, outcome("root", 1, 0)])
    html = viewer_client.get(reverse("runs:detail", args=[empty.pk])).content.decode()
    assert '>none</dd>' in html and 'id="loop-aborts"' in html and "Top error types" not in html


def test_every_published_type_has_its_base_kind():
    schema = json.loads((GG_FIXTURES / "telemetry-event.schema.json").read_text())["$defs"]
    published = {v["const"] for v in schema["GgTurnErrorType"]["oneOf"]}
    kinds = {v["const"] for v in schema["GgTurnErrorKind"]["oneOf"]} | {"toolchain"}  # an earlier era's sixth
    assert published <= set(TURN_ERROR_TYPES) and set(TURN_ERROR_TYPES.values()) <= kinds
    assert all(t.startswith(k.split("_")[0]) for t, k in TURN_ERROR_TYPES.items())


def test_an_earlier_eras_types_rank_under_their_base_and_an_unknown_kind_keeps_its_name(viewer_client):
    run = Run.objects.create(name="errors-of-an-earlier-era")
    append(run, [
        outcome("root", 1, 1, "program_fault", "program_tool_error"),  # program_api_error's earlier id
        outcome("root", 2, 2, "program_fault", "program_tool_error"),
        outcome("root", 3, 3, "toolchain", "toolchain_failed"),
        outcome("root", 4, 4, "transpile", "transpile_semantic"),
        outcome("root", 5, 5, "brand_new", "brand_new_thing"),  # a kind and a type no era published
    ])
    top = build_report(run)["run"]["errors"]["topTypes"]
    assert top == [
        {"id": "program_tool_error", "label": "uncaught call failure", "kind": "program_fault", "count": 2},
        {"id": "brand_new_thing", "label": "brand new thing", "kind": None, "count": 1},
        {"id": "toolchain_failed", "label": "toolchain failed", "kind": "toolchain", "count": 1},
        {"id": "transpile_semantic", "label": "transpile semantic", "kind": "transpile", "count": 1},
    ]
    html = viewer_client.get(reverse("runs:detail", args=[run.pk])).content.decode()
    assert 'data-ranked-type="toolchain_failed" title="toolchain_failed">toolchain failed <span class="badge note" data-base-kind="toolchain">' in html
    assert '<li data-error-kind="brand_new"><code>brand_new</code> <b>1×</b>' in html  # the raw kind
    assert 'data-ranked-type="brand_new_thing" title="brand_new_thing">brand new thing <span class="badge note" data-base-kind="unknown">' in html
