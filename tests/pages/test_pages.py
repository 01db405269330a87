"""What every run page shares: polling while the run is live, and the login. Each tab's own test
is tests/pages/test_<tab>.py, beside runs/pages/<tab>.py."""

import pytest
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from tests.paths import STREAMS
from tests.pages_helpers import get

pytestmark = pytest.mark.django_db


def test_pages_poll_while_the_run_is_live_and_stop_when_it_ends(viewer_client):
    live = Run.objects.create(name="live")
    lines = (STREAMS / "pages_run.ndjson").read_bytes().splitlines()
    ingest.append_lines(live, lines[:-1])  # everything but session_ended
    for name in ("detail", "agents", "stores", "divergences", "refusals", "arms"):
        assert 'hx-trigger="every 3s"' in get(viewer_client, name, live.pk)
    ingest.append_lines(live, lines[-1:])
    for name in ("detail", "agents", "stores", "divergences", "refusals", "arms"):
        assert "every 3s" not in get(viewer_client, name, live.pk)  # (the Refusals search has a trigger of its own)


def test_pages_need_a_login(client, run):
    response = client.get(reverse("runs:agents", args=[run.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]
