"""Pages whose content grows with the run stay bounded: the agent page shows the latest programs and
pages back through older ones; the Stores page shows a page of each kind's stores and pages through
one kind; both in the same number of queries however much the run holds."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.programs import PROGRAMS_SHOWN
from runs.pages.stores import STORES_SHOWN

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
    n = PROGRAMS_SHOWN
    assert shown == [list(range(n + 21, 2 * n + 21)), list(range(21, n + 21)), list(range(1, 21))]
    assert 'href="?#programs">the latest</a>' in pages[-1]


@pytest.mark.parametrize("before", ["x", "-3", "1e9", ""])
def test_a_bad_programs_cursor_shows_the_latest(viewer_client, before):
    run = code_run("cursor", 3)
    html, _ = agent_page(viewer_client, run, f"?programs_before={before}")
    assert len(PROGRAM.findall(html)) == 3 and "older programs" not in html


def stores_run(name, agents):
    """`agents` agents, each holding a memories store of its own and the run's one history store."""
    records = [{"timestamp": "2026-07-24T04:00:00Z", "type": "session_started"}]
    for i in range(agents):
        agent = f"agent-{i}"
        records += [{"timestamp": "2026-07-24T04:00:00Z", "type": "agent_spawned", "agentId": agent,
                     "profileId": "worker", "modelId": "vendor/small", "depth": 0},
                    {"timestamp": "2026-07-24T04:00:00Z", "type": "agent_modules", "agentId": agent, "modules": [
                        {"kind": "memories", "moduleId": f"memories-{i}", "enabled": True, "origin": "created",
                         "writable": True, "scope": "isolated"},
                        {"kind": "history", "moduleId": "history-0", "enabled": True, "origin": "created",
                         "writable": True}]}]
    run = Run.objects.create(name=name)
    assert ingest.append(run, records).stored == len(records)
    return run


def stores_page(client, run, query=""):
    with CaptureQueriesContext(connection) as queries:
        response = client.get(reverse("runs:stores", args=(run.pk,)) + query)
    assert response.status_code == 200
    html = response.content.decode()
    return re.findall(r'data-store="([^"]+)"', html), html, len(queries)


def test_the_stores_page_shows_a_page_of_each_kind(viewer_client):
    _, _, small_queries = stores_page(viewer_client, stores_run("few", STORES_SHOWN + 3))
    run = stores_run("many", 2 * STORES_SHOWN + 20)
    shown, html, queries = stores_page(viewer_client, run)
    assert queries == small_queries
    assert shown == ["history-0", *(f"memories-{i}" for i in range(STORES_SHOWN))]
    assert f"· {2 * STORES_SHOWN + 20} stores" in html and "Page 1 of 3" in html
    pages = [shown]
    while len(pages) < 5 and (after := re.search(r'href="(\?kind=memories&amp;page=\d+)#kind-memories" rel="next"', html)):
        shown, html, _ = stores_page(viewer_client, run, after[1].replace("&amp;", "&"))
        pages.append(shown)
    assert pages[1:] == [[f"memories-{i}" for i in range(STORES_SHOWN, 2 * STORES_SHOWN)],
                         [f"memories-{i}" for i in range(2 * STORES_SHOWN, 2 * STORES_SHOWN + 20)]]
    assert "history-0" not in pages[-1] and 'rel="prev"' in html


@pytest.mark.parametrize("query", ["?kind=memories&page=x", "?kind=memories&page=0", "?page=-1"])
def test_a_bad_stores_page_shows_the_first(viewer_client, query):
    shown, _, _ = stores_page(viewer_client, stores_run("bad", STORES_SHOWN + 1), query)
    assert [s for s in shown if s.startswith("memories-")] == [f"memories-{i}" for i in range(STORES_SHOWN)]


def test_a_stores_page_past_the_last_shows_the_last(viewer_client):
    shown, _, _ = stores_page(viewer_client, stores_run("past", STORES_SHOWN + 1), "?kind=memories&page=9")
    assert shown == [f"memories-{STORES_SHOWN}"]


def test_the_stores_page_finds_stores_by_a_part_of_their_id(viewer_client, monkeypatch):
    """In any case, in the tab's order, a kind none matches left out, each kind's figures still counting
    all its stores; the pages keep the search."""
    n = 2 * STORES_SHOWN + 20
    run = stores_run("to-find", n)
    matching = [f"memories-{i}" for i in range(n) if str(i).startswith("1")]  # 1, 10-19, 100-119
    shown, html, _ = stores_page(viewer_client, run, "?find=MEMORIES-1")
    assert shown == matching and f"{len(matching)} stores match" in html and f"· {n} stores" in html
    monkeypatch.setattr("runs.pages.stores.STORES_SHOWN", 10)
    shown, html, _ = stores_page(viewer_client, run, "?find=MEMORIES-1")
    assert shown == matching[:10] and "Page 1 of 4" in html
    after = re.search(r'href="(\?kind=memories&amp;find=MEMORIES-1&amp;page=2)#kind-memories" rel="next"', html)
    shown, _, _ = stores_page(viewer_client, run, after[1].replace("&amp;", "&"))
    assert shown == matching[10:20]
    shown, html, _ = stores_page(viewer_client, run, "?find=%3Cb%3Enone")
    assert shown == [] and "No store's id contains “&lt;b&gt;none”." in html and "<b>none" not in html
