"""The run header frame alone (runs/pages/header.py): what every tab's header fetches when the run
moves — the same figures as the page's own header, and Cancel returning to the page it sits on."""

import pytest
from django.urls import reverse

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
