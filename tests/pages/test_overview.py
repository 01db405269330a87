"""The Overview tab (runs/pages/overview.py): the capability set, limits, clocks and error turns."""

import pytest

from runs.ingest import writer as ingest
from runs.models import Run
from tests.pages_helpers import get, links, load, rows

pytestmark = pytest.mark.django_db


def test_overview_shows_the_capability_set_and_limits(viewer_client, run):
    html = get(viewer_client, "detail", run.pk)
    assert "<code>maxTurns</code> 40" in html[html.index('id="limits"'):]
    capability_set = html[html.index('id="capability-set"'):]
    assert "4 profiles" in capability_set[:300]
    assert "&quot;scope&quot;: &quot;inherited&quot;" in capability_set  # the declared values, as JSON text


def test_overview_clocks_runtime_waiting_and_agents_by_status(viewer_client):
    multi = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "detail", multi.pk)
    clocks = html[html.index('id="clocks"'):html.index("</section>", html.index('id="clocks"'))]
    assert 'id="clock-runtime">33s<' in clocks and 'id="clock-waiting">16s<' in clocks  # root blocked 16.577 s
    assert [r for r in rows(clocks, "class") if r[0].startswith("status ")] == [
        ("status status-done", "done"), ("status status-failed", "failed")]
    assert "</span> 6</li>" in clocks and "</span> 1</li>" in clocks
    # a live run: the declared runtime ceiling beside the runtime, and who is blocked right now
    live = Run.objects.create(name="live")
    ingest.append(live, [
        {"type": "session_started", "timestamp": "2026-01-01T00:00:00Z",
         "capabilitySet": {"agents": [{"slug": "lead"}], "limits": {"maxRuntimeSecs": 600}}},
        {"type": "agent_spawned", "agentId": "root", "profileId": "lead", "timestamp": "2026-01-01T00:00:01Z"},
        {"type": "agent_status", "agentId": "root", "status": "blocked", "timestamp": "2026-01-01T00:00:02Z"},
    ])
    html = get(viewer_client, "detail", live.pk)
    clocks = html[html.index('id="clocks"'):html.index("</section>", html.index('id="clocks"'))]
    assert "of 10m 00s allowed" in clocks and "1 blocked now" in clocks


def test_overview_error_turns_by_kind_with_types_beneath(viewer_client, run):
    html = get(viewer_client, "detail", run.pk)
    assert rows(html, "data-error-kind") == [("program_fault", "program_fault 1× program_unknown_name 1×")]
    multi = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "detail", multi.pk)
    assert rows(html, "data-error-kind") == [("program_fault", "program_fault 2× program_throw 2×"),
                                             ("model_api", "model_api 1× model_length_capped 1×"),
                                             ("transpile", "transpile 1× transpile_syntax 1×")]


def test_the_failures_by_class_link_the_failed_calls_in_the_feed(viewer_client, run):
    """Each failure list links the run's failed calls of its kind; the feed lists as many as it counts."""
    html = get(viewer_client, "detail", run.pk)
    run.refresh_from_db()
    for kind, tallies, anchor in (("tool", run.tool_failures, "tool-failures-feed"),
                                  ("call", run.api_failures, "api-failures-feed")):
        assert tallies, kind  # the fixture run fails calls of both kinds
        assert f'id="{anchor}" href="/runs/{run.pk}/feed/?kind={kind}&amp;failed=1"' in html
        listed = viewer_client.get(f"/runs/{run.pk}/feed/rows?kind={kind}&failed=1&after=0").json()["rows"]
        assert listed == sum(tallies.values()), kind
        for cls, n in tallies.items():  # and each class's count links to its own
            query = f"kind={kind}&failed=1&failure={cls}"
            assert f'<a href="/runs/{run.pk}/feed/?{query.replace("&", "&amp;")}"' in html
            assert viewer_client.get(f"/runs/{run.pk}/feed/rows?{query}&after=0").json()["rows"] == n, (kind, cls)


def test_each_usage_rows_profile_and_cost_open_its_instances(viewer_client, run):
    html = get(viewer_client, "detail", run.pk)
    usage = html[html.index('id="usage"'):html.index("</section>", html.index('id="usage"'))]
    slots = links(usage, "data-slot")
    assert slots
    for slot, hrefs in slots.items():
        profile = slot.split("|")[0]
        assert hrefs and len(set(hrefs)) == 1, slot
        path, _, query = hrefs[0].partition("?")
        roster = get(viewer_client, "agents", run.pk, query=query.split("#")[0])
        shown = roster[:roster.index('id="profile-table"')]
        agents = [a for a, _ in rows(shown, "data-agent")]
        assert agents and all(run.agents.get(agent_id=a).profile_id == profile for a in agents), slot
