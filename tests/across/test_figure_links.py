"""Every compared figure links to where it comes from on its run: the rows it counts in the feed, or
the page showing it."""

import pytest
from urllib.parse import parse_qsl

from django.urls import reverse

from runs.across.compare import agent_calls
from runs.ingest import writer as ingest
from runs.models import Run

from runs.pages.report import build_report
from tests.pages_helpers import feed_rows_of, links, refusing_agents, rows
from tests.streams import STREAMS, import_stream

pytestmark = pytest.mark.django_db


def figure_links(html):
    """{figure[:key]: the hrefs of its a and b cells} (not its name's glossary mark)."""
    return {k: [h for h in v if not h.startswith(reverse("glossary"))] for k, v in links(html, "data-figure").items()}


@pytest.fixture
def two_runs():
    a, _ = import_stream(STREAMS / "multi_agent.ndjson", "a")
    b, _ = import_stream(STREAMS / "multi_agent.ndjson", "b")
    return a, b


def test_the_whole_runs_figures_open_their_rows_and_pages(viewer_client, two_runs):
    a, b = two_runs
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    total = html[:html.index('id="pairs"')] if 'id="pairs"' in html else html
    hrefs = figure_links(total)
    report = build_report(a)["run"]
    turns = [h for h in hrefs["turns"] if h.startswith(reverse("runs:feed", args=[a.pk]))]
    assert len(turns) == 1 and "kind=turn" in turns[0]
    assert len([r for r in feed_rows_of(viewer_client, turns[0]) if r[1] == "turn"]) == report["counts"]["turns"]
    assert hrefs["agents"][0] == reverse("runs:agents", args=[a.pk])
    assert hrefs["agents"][1] == reverse("runs:agents", args=[b.pk])
    figures = dict(rows(total, "data-figure"))
    assert figures["agents"].startswith("Agents")  # the figure's name in words
    assert "errorTurns" not in figures["errorTurns"] and "Error turns" in figures["errorTurns"]
    assert figures["tokens:uncachedInput"].startswith("Tokens uncached input")
    operation = next(k.split(":", 1)[1] for k in hrefs if k.startswith("callsByOperation:") and hrefs[k])
    href = hrefs[f"callsByOperation:{operation}"][0]
    assert f"op={operation}" in href.replace("%2F", "/")
    assert feed_rows_of(viewer_client, href)  # the operation's call rows
    for key, targets in hrefs.items():
        for target in targets:
            assert viewer_client.get(target).status_code == 200, (key, target)


def test_a_pairs_figures_open_that_agents_rows(viewer_client, two_runs):
    a, b = two_runs
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    pair = html[html.index('id="pairs"'):]
    hrefs = figure_links(pair[:pair.index("</section>")])
    agent = dict(parse_qsl(hrefs["turns"][0].partition("?")[2]))["agent"]
    doc = next(d for d in build_report(a)["agents"] if d["agentId"] == agent)
    shown = feed_rows_of(viewer_client, hrefs["turns"][0])
    assert {(k, ag) for _, k, ag in shown} <= {("turn", agent), ("turn", "")} and len(shown) == doc["turns"]
    assert hrefs["calls"][0] == reverse("runs:agent", args=[a.pk, agent]) + "#surface"
    operation = next(k for k, n in agent_calls(doc).items() if n)
    href = hrefs[f"callsByOperation:{operation}"][0]
    assert dict(parse_qsl(href.partition("?")[2])) == {"agent": agent, "op": operation}
    assert feed_rows_of(viewer_client, href)


def test_a_pairs_refusals_open_the_refusals_tab_searched_for_its_agent(viewer_client):
    a, b = Run.objects.create(name="refusing-a"), Run.objects.create(name="refusing-b")
    for run in (a, b):
        ingest.append(run, refusing_agents(12))
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    hrefs = figure_links(html[html.index('id="pairs"'):])  # every pair's
    refused = [h for k, v in hrefs.items() if k.startswith("refusalsByOperation:") for h in v]
    assert refused
    agent = dict(parse_qsl(refused[0].partition("?")[2]))["q"]
    shown = [key for key, _ in rows(viewer_client.get(refused[0]).content, "data-agent")]
    assert agent in shown and all(agent in other for other in shown)
