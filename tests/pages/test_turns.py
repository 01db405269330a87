"""A turn as an address (runs/pages/turns.py), for code and tool-calling agents."""

import pytest
from django.urls import reverse

from runs.feed.windows import FeedRenderer
from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.programs import CALLS_LISTED
from runs.pages.turns import RECORDS_SHOWN
from tests.pages_helpers import authored, rows

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


def test_a_turn_of_thousands_of_calls_lists_its_records_a_page_at_a_time(viewer_client):
    """A program looping over a workspace: 700 calls in one turn (2,102 records). The program lists
    its first calls and points at the turn's records, which come a page at a time."""
    apis = [{"module": "files", "path": "gg.files", "functions": [{"name": "read_file", "operation": "files.read_file"}]}]
    records = [{"type": "agent_spawned", "agentId": "root", "profileId": "root", "depth": 0},
               {"type": "agent_surface", "agentId": "root", "executionMode": "responses_as_code", "tools": [],
                "apis": apis, "programLanguage": "python"},
               {"type": "turn_started", "agentId": "root"}]
    for i in range(700):
        records += [{"type": "api_call", "agentId": "root", "operation": "files.read_file"},
                    {"type": "api_result", "agentId": "root", "operation": "files.read_file", "ok": True},
                    {"type": "log", "agentId": "root", "level": "info", "message": f"read {i}"}]
    records.append({"type": "code_execution", "agentId": "root", "ok": True, "logs": []})  # after its calls
    run = Run.objects.create(name="loop")
    ingest.append(run, records)
    url = reverse("runs:turn", args=[run.pk, "root", 1])
    html = viewer_client.get(url).content.decode()
    assert len(rows(html, "data-type")) == RECORDS_SHOWN and "Records 1–300 of 2,102" in html
    assert html.count('<tr class="" data-operation="files.read_file">') == CALLS_LISTED
    assert f'the first {CALLS_LISTED} of its 700 calls; <a href="{url}#turn-records">every record of its turn</a>' in html
    last = viewer_client.get(url + "?records=2099").content.decode()
    assert [t for t, _ in rows(last, "data-type")] == ["api_result", "log", "code_execution"]
    assert 'href="?records=1799#turn-records">← before' in last
