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
