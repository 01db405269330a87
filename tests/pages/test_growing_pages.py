"""Pages whose content grows with the run stay bounded: the agent page shows the latest programs and
pages back through older ones, in the same number of queries however many programs the agent ran."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.programs import PROGRAMS_SHOWN

pytestmark = pytest.mark.django_db
PROGRAM = re.compile(r'<details class="program (?:ok|failed)"')
TURN = re.compile(r'<details class="program [^>]*id="turn-(\d+)"')


def code_run(name, programs):
    """A code agent that ran `programs` programs, one a turn (every third one failed)."""
    records = [{"timestamp": "2026-07-24T04:00:00Z", "type": "session_started"},
               {"timestamp": "2026-07-24T04:00:00Z", "type": "agent_spawned", "agentId": "root",
                "profileId": "root", "modelId": "vendor/big", "depth": 0},
               {"timestamp": "2026-07-24T04:00:00Z", "type": "agent_surface", "agentId": "root",
                "executionMode": "responses_as_code", "tools": [], "apis": [], "programLanguage": "python"}]
    for turn in range(1, programs + 1):
        records += [{"timestamp": "2026-07-24T04:00:01Z", "type": "turn_started", "agentId": "root"},
                    {"timestamp": "2026-07-24T04:00:01Z", "type": "code_execution", "agentId": "root",
                     "ok": turn % 3 != 0, "durationMs": 4, "logs": [f"program {turn}"]},
                    {"timestamp": "2026-07-24T04:00:01Z", "type": "turn_outcome", "agentId": "root",
                     "outcome": "progressed", "turns": turn}]
    run = Run.objects.create(name=name)
    assert ingest.append(run, records).stored == len(records)
    return run


def agent_page(client, run, query=""):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("runs:agent", args=(run.pk, "root")) + query)
    assert response.status_code == 200
    return response.content.decode(), len(queries)


def test_the_agent_page_pages_back_through_programs_in_bounded_queries(viewer_client):
    small, small_queries = agent_page(viewer_client, code_run("few", PROGRAMS_SHOWN + 5))
    run = code_run("many", 2 * PROGRAMS_SHOWN + 20)
    html, queries = agent_page(viewer_client, run)
    assert len(PROGRAM.findall(small)) == len(PROGRAM.findall(html)) == PROGRAMS_SHOWN
    assert queries == small_queries  # the same page, whatever the number of programs
    pages = [html]
    while len(pages) < 5 and (older := re.search(r'href="(\?programs_before=\d+)#programs" rel="next"', pages[-1])):
        page, page_queries = agent_page(viewer_client, run, older[1])
        assert page_queries == queries
        pages.append(page)
    shown = [[int(t) for t in TURN.findall(p)] for p in pages]  # each page oldest first, the latest page first
    assert shown == [list(range(71, 121)), list(range(21, 71)), list(range(1, 21))]
    assert 'href="?#programs">the latest</a>' in pages[-1]


@pytest.mark.parametrize("before", ["x", "-3", "1e9", ""])
def test_a_bad_programs_cursor_shows_the_latest(viewer_client, before):
    run = code_run("cursor", 3)
    html, _ = agent_page(viewer_client, run, f"?programs_before={before}")
    assert len(PROGRAM.findall(html)) == 3 and "older programs" not in html
