import pytest
from django.urls import reverse

from runs.ingest.writer import append
from runs.models import Run

pytestmark = pytest.mark.django_db


def test_feed_page_needs_a_login(client):
    run = Run.objects.create(name="page")
    response = client.get(reverse("runs:feed", args=[run.pk]))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_feed_page_connects_the_socket_from_the_start_and_lists_agents(viewer_client):
    run = Run.objects.create(name="page")
    append(run, [{"agentId": "root", "type": "turn_started"}, {"agentId": "agent-1", "type": "turn_started"}])
    response = viewer_client.get(reverse("runs:feed", args=[run.pk]) + "?agent=agent-1")
    html = response.content.decode()
    assert response.status_code == 200
    assert f'hx-ext="ws" ws-connect="/ws/runs/{run.pk}/feed/?after=0"' in html
    assert '<option value="agent-1" selected>agent-1</option>' in html
    assert 'aria-current="page">Feed</a>' in html
    assert 'id="feed-cursor" data-seq="0"' in html


def test_unknown_run_is_404(viewer_client):
    assert viewer_client.get(reverse("runs:feed", args=[424242])).status_code == 404
