"""The Arms tab (runs/pages/arms.py): arms side by side."""

import pytest

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.arms import AGENTS_NAMED
from tests.pages_helpers import get, reads_of, rows

pytestmark = pytest.mark.django_db


def test_arms_side_by_side(viewer_client, run):
    html = get(viewer_client, "arms", run.pk)
    arms = [a for a, _ in rows(html, "data-arm")]
    assert arms == ["java · none", "python · return+errors", "rust · return+parameters+errors",
                    "typescript · return+errors", "no arm: tool calling"]
    figures = dict(rows(html, "data-row"))
    assert figures["turns"] == "Turns 3 2 1 1 1"
    assert figures["error_turns"] == "Error turns 0 1 0 0 0"
    assert figures["calls"] == "Calls 3 9 1 4 4"
    assert figures["docs_view"] == "docs_view tokens 0 1.1k 900 200 0"
    assert figures["search_results"] == "search_results tokens 0 150 300 80 0"
    ops = dict(rows(html, "data-operation"))
    assert ops["files.read_file"] == "files.read_file 0 2 1 2 0"
    assert ops["read_file"] == "read_file 0 0 0 0 2"


def test_an_arm_of_many_agents_names_twenty_and_counts_the_rest(viewer_client):
    run = Run.objects.create(name="crowded-arm")
    ingest.append(run, [{"type": "turn_started", "agentId": f"a{i:02d}", "turn": 1} for i in range(AGENTS_NAMED + 7)])
    html = get(viewer_client, "arms", run.pk)
    assert html.count(f'href="/runs/{run.pk}/agents/a') == AGENTS_NAMED
    assert f'/agents/a{AGENTS_NAMED - 1:02d}/"' in html and f'/agents/a{AGENTS_NAMED:02d}/"' not in html
    assert f'<a class="arm-more" href="/runs/{run.pk}/agents/">and 7 more</a>' in html
    assert dict(rows(html, "data-row"))["turns"] == f"Turns {AGENTS_NAMED + 7}"  # the figures count them all


def test_the_arms_read_the_same_few_queries_whatever_the_agents(viewer_client, run):
    """Of each agent only what the comparison reads (a whole agent row was most of its time on a run of
    thousands), and a field read beyond them would cost a query an agent."""
    counts = []
    for n in (3, 40):
        crowd = Run.objects.create(name=f"arms-{n}")
        ingest.append(crowd, [{"type": "agent_surface", "agentId": f"a{i:02d}", "executionMode": "responses_as_code",
                               "programLanguage": "python", "docViewTypes": "return", "tools": [], "apis": []}
                              for i in range(n)] + [{"type": "api_call", "agentId": "a00", "operation": "files.read_file"}])
        html, queries = reads_of(viewer_client, "arms", crowd)
        counts.append(queries)
        assert dict(rows(html, "data-operation"))["files.read_file"] == "files.read_file 1"
    assert counts[0] == counts[1]
