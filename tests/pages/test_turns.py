"""A turn as an address (runs/pages/turns.py), for code and tool-calling agents."""

import pytest
from django.urls import reverse

from runs.feed.windows import FeedRenderer
from tests.pages_helpers import authored

pytestmark = pytest.mark.django_db


def test_turn_urls_for_code_and_tool_calling_agents(viewer_client):
    run = authored()
    code = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 3))).content.decode()
    assert "/reference/?lang=python#shell.shell" in code  # the refused call, linked to its reference entry
    assert 'id="turn-refusals"' in code and "not offered" in code
    assert "reading" in code  # the program's output
    tool = viewer_client.get(reverse("runs:turn", args=(run.pk, "agent-0", 2))).content.decode()
    assert 'data-tool="shell"' in tool and "exit 2" in tool and "ls: cannot open directory" in tool
    assert viewer_client.get(reverse("runs:turn", args=(run.pk, "agent-0", 9))).status_code == 404
    assert viewer_client.get(reverse("runs:turn", args=(run.pk, "nobody", 1))).status_code == 404
    # The feed names each turn and links to it.
    renderer = FeedRenderer(run.pk)
    rendered = renderer.render(*renderer.next_batch(0, limit=1000))
    assert "TURN 3" in rendered and f'href="/runs/{run.pk}/agents/root/turns/3/"' in rendered
    assert f'class="feed-open" href="/runs/{run.pk}/events/1/"' in rendered
