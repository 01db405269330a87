"""The run header frame alone (runs/pages/header.py): what every tab's header fetches when the run
moves — the same figures as the page's own header, and Cancel returning to the page it sits on."""

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from runs.ingest import writer
from runs.models import Run
from tests.pages_helpers import get
from tests.streams import REAL_MOCK, import_stream

pytestmark = pytest.mark.django_db


def test_the_frame_carries_the_pages_header_figures(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    frame = get(viewer_client, "header", run.pk)
    for figure in ("<b>1</b><span>agents</span>", "<b>2</b><span>turns</span>", "<b>2.8k</b><span>tokens</span>"):
        assert figure in frame
    page = get(viewer_client, "detail", run.pk)
    header = frame[frame.index('<section id="run-header"'):frame.index("</section>")]
    assert "real-mock-session" in header and header in page


def test_cancel_returns_to_the_page_the_frame_sits_on_and_nowhere_else(operator_client):
    run = Run.objects.create(name="live", source=Run.Source.ENGINE, launch_spec={"task": "t"})
    url = reverse("runs:header", args=[run.pk])
    agents = reverse("runs:agents", args=[run.pk])
    here = operator_client.get(url, {"next": agents}).content.decode()
    assert f'name="next" value="{agents}"' in here
    away = operator_client.get(url, {"next": "https://elsewhere.example/"}).content.decode()
    assert "elsewhere.example" not in away and f'value="{reverse("runs:detail", args=[run.pk])}"' in away


def test_a_live_launched_runs_clocks_count_from_its_start(viewer_client):
    """A launched run in a long turn read "0.0s duration" and "0.0s wall clock" until the turn stored
    its records: the clocks were its last record's stamp less its start. A launched run's clock is this
    server's, so while it is live it counts to now; an imported live run still counts to its last stamp."""
    started = timezone.now() - timedelta(hours=2)
    stamp = started.strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    opening = [{"timestamp": stamp, "sessionId": "s", "type": "session_started"},
               {"timestamp": stamp, "sessionId": "s", "agentId": "root", "type": "agent_spawned", "profileId": "p",
                "modelId": "m", "depth": 0}]
    figures = {}
    for source in (Run.Source.ENGINE, Run.Source.API):
        run = Run.objects.create(name=source, source=source, status=Run.Status.RUNNING, started_at=started)
        assert writer.append(run, opening).stored == 2
        figures[source] = [get(viewer_client, "header", run.pk), get(viewer_client, "detail", run.pk)]
    assert all("<b>2h 00m</b><span>duration</span>" in page for page in figures[Run.Source.ENGINE])
    assert '<b id="clock-runtime">2h 00m</b>' in figures[Run.Source.ENGINE][1]
    assert all("<b>0.0s</b><span>duration</span>" in page for page in figures[Run.Source.API])
