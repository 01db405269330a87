"""The timeline (runs/pages/timeline.py): a lane per agent, turns linking to their pages."""

import pytest
from django.urls import reverse

from tests.pages_helpers import authored, rows

pytestmark = pytest.mark.django_db


def test_the_timeline_has_one_lane_per_agent_with_turn_links(viewer_client):
    run = authored()
    html = viewer_client.get(reverse("runs:timeline", args=(run.pk,))).content.decode()
    assert [a for a, _ in rows(html, "data-agent")] == ["root", "agent-0"]
    for agent, n in (("root", 4), ("agent-0", 2)):
        assert html.count(f'href="/runs/{run.pk}/agents/{agent}/turns/') >= 1
        assert f'href="/runs/{run.pk}/agents/{agent}/turns/{n}/"' in html
    assert 'class="turn error"' in html and 'class="wait"' in html and "tick failed" in html
    zoomed = viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + "?start=0&end=50")
    assert zoomed.status_code == 200 and 'id="zoom-out"' in zoomed.content.decode()
    assert viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + "?start=x&end=nan").status_code == 200


def stamped_run(name, n):
    """A run of the synthetic stream's n records, each stamped 1 ms after the one before."""
    from runs.ingest import writer as ingest
    from runs.models import Run
    from tests.pages_helpers import synthetic_stream

    records = synthetic_stream(n)
    for i, record in enumerate(records):
        s, ms = divmod(i, 1000)
        record["timestamp"] = f"2026-07-24T04:{s // 60:02d}:{s % 60:02d}.{ms:03d}Z"
    run = Run.objects.create(name=name)
    assert ingest.append(run, records).stored == n
    return run


def test_a_long_run_draws_a_bounded_picture_in_the_same_queries(viewer_client):
    """Thousands of turns draw as merged blocks (a few hundred a lane at most) and each lane's calls as
    two paths, in as many queries as a short run."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.pages.timeline import WIDTH

    pages = {}
    for name, n in (("short", 200), ("long", 20_000)):
        run = stamped_run(name, n)
        with CaptureQueriesContext(connection) as queries:
            html = viewer_client.get(reverse("runs:timeline", args=(run.pk,))).content.decode()
        pages[name] = html, len(queries), run.agents.get(agent_id="root").turns
    (short, short_queries, _), (long, long_queries, turns) = pages["short"], pages["long"]
    assert long_queries == short_queries
    lanes = long.split('<g class="lane"')[1:]
    assert len(lanes) == 2 and turns > 1500
    for lane in lanes:
        assert 0 < lane.count('class="turn-block"') <= WIDTH // 2 < turns
        assert lane.count('<path class="tick') <= 2
    assert 'href="/runs/' in long and "turn 1–" in long  # merged blocks name their range and open its first turn
