"""Reading big pages: refusals grouped by call and agent, collapsed and searchable; a jump list
over the stores; the context chart's axes, turn labels and window limit."""

import pytest
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.refusals import GROUP_ROWS_SHOWN
from runs.templatetags.run_pages import context_chart
from tests.pages_helpers import load, rows, synthetic_stream

pytestmark = pytest.mark.django_db


def _get(client, name, *args):
    response = client.get(reverse(f"runs:{name}", args=args))
    assert response.status_code == 200
    return response.content.decode()


def test_a_big_roster_reads_as_one_collapsed_group_per_call(viewer_client):
    run = Run.objects.create(name="many-refusals")
    ingest.append(run, synthetic_stream(2000))
    html = _get(viewer_client, "refusals", run.pk)
    groups = html.count('<details class="refusal-group"')
    assert groups == 1  # ~180 refusals of gg.shell.shell by root: one group, not 180 rows to scroll
    summary = html[html.index('<details class="refusal-group"'):]
    summary = summary[:summary.index("</summary>")]
    refused = int(html.split('<b id="refused-total">')[1].split("<")[0])
    assert refused > 150 and f"{refused}×" in summary
    assert "turns 1–" in summary and "not available" in summary
    assert len(rows(html, "data-turn")) == GROUP_ROWS_SHOWN  # the first rows only; the rest counted
    assert f"… and {refused - GROUP_ROWS_SHOWN} more of this call, counted above." in html
    assert 'id="refusal-search" name="q"' in html and "hx-preserve" in html


def test_stores_have_a_jump_list(viewer_client):
    run = load("pages")
    html = _get(viewer_client, "stores", run.pk)
    jumps = html[html.index('class="panel store-jumps"'):html.index("</nav>", html.index("store-jumps"))]
    for store_id in [s for s, _ in rows(html, "data-store")]:
        assert f'href="#store-{store_id}"' in jumps


def _turns(totals, window):
    return {"turns": [{"turn": i + 1, "total": t, "window": window, "bands": [("system", t)]}
                      for i, t in enumerate(totals)], "bands": ["system"], "peak": max(totals), "more": False}


def test_the_chart_draws_the_window_limit_when_the_peak_nears_it():
    chart = context_chart(_turns([30_000, 60_000, 90_000], 128_000))
    assert chart["limit_line"]["value"] == 128_000
    assert [t["value"] for t in chart["ticks"]] == [0, 100_000, 200_000]
    assert [label["turn"] for label in chart["labels"]] == [1, 2, 3]
    assert chart["limit_off_chart"] is None


def test_a_limit_far_above_the_peak_is_named_not_drawn():
    chart = context_chart(_turns([300, 371], 128_000))
    assert chart["limit_line"] is None and chart["limit_off_chart"] == 128_000
    assert [t["value"] for t in chart["ticks"]] == [0, 250, 500]


def test_turn_labels_thin_out_on_a_long_run():
    chart = context_chart(_turns(list(range(100, 220)), None))
    turns = [label["turn"] for label in chart["labels"]]
    assert turns[0] == 1 and turns[-1] == 120 and len(turns) <= 60
    xs = [label["x"] for label in chart["labels"]]
    assert min(b - a for a, b in zip(xs, xs[1:])) >= 20  # no two labels on top of each other


def test_the_agent_page_renders_the_axes(viewer_client):
    run = load("pages")
    html = _get(viewer_client, "agent", run.pk, "root")
    assert 'class="axis y-axis"' in html and "data-turn-label=" in html and "turn →" in html
