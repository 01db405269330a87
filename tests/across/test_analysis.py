"""The analysis: grouped figures equal the sums of the per-run reports; exports carry the same
figures; queries do not grow with runs."""

import csv
import io
from collections import Counter

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.arms import arm_group
from runs.pages.report import build_report
from tests.pages_helpers import links, rows, synthetic_stream
from tests.streams import STREAMS, import_stream

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus():
    runs = [import_stream(STREAMS / "multi_agent.ndjson", "arms-multi")[0],
            import_stream(STREAMS / "pages_run.ndjson", "arms-pages")[0]]
    synthetic = Run.objects.create(name="synthetic-1")
    ingest.append(synthetic, synthetic_stream(400))
    return runs + [synthetic]


def expected_by(corpus, key):
    """Per group, the sums of the report agents' figures."""
    out = {}
    for run in corpus:
        for doc in build_report(run)["agents"]:
            g = out.setdefault(key(doc) or "—", {"runs": set(), "agents": 0, "turns": 0, "errorTurns": 0, "calls": 0,
                                                "refusals": Counter(), "failures": Counter(), "docs_view": 0,
                                                "search_results": 0})
            g["runs"].add(run.pk)
            g["agents"] += 1
            for f in ("turns", "errorTurns", "calls"):
                g[f] += doc[f]
            for r in doc["refusalGroups"]:  # exact; `refusals` lists each group's first entries only
                g["refusals"][r["operation"] or r["spelling"]] += r["refused"]
            g["failures"].update({f"api {k}": v for k, v in doc["apiFailures"].items()})
            g["failures"].update({f"tool {k}": v for k, v in doc["toolFailures"].items()})
            for band in ("docs_view", "search_results"):
                g[band] += doc["contextBands"].get(band, 0)
    return out


def test_grouped_by_program_language_equals_the_sums_of_the_reports(viewer_client, corpus):
    result = viewer_client.get(reverse("runs:analysis"), {"group": "language", "format": "json"}).json()
    expected = expected_by(corpus, lambda d: d["programLanguage"])
    assert {g["group"] for g in result["groups"]} == set(expected) and len(expected) >= 4
    for g in result["groups"]:
        e = expected[g["group"]]
        assert g["runs"] == len(e["runs"]) and g["agents"] == e["agents"], g["group"]
        assert (g["turns"], g["errorTurns"], g["calls"]) == (e["turns"], e["errorTurns"], e["calls"]), g["group"]
        assert g["refusalsByOperation"] == dict(e["refusals"]) and g["failuresByClass"] == dict(e["failures"])
        assert g["bandTokens"] == {"docs_view": e["docs_view"], "search_results": e["search_results"]}
        assert g["errorTurnRate"] == (e["errorTurns"] / e["turns"] if e["turns"] else None)
        for band in ("docs_view", "search_results"):
            assert g["tokensPerTurn"][band] == (e[band] / e["turns"] if e["turns"] else None)
    assert any(g["refusals"] for g in result["groups"])  # the corpus exercises refusals
    assert result["runs"] == 3 and result["agents"] == sum(e["agents"] for e in expected.values())


def test_the_arm_groups_language_by_doc_view_types_and_filters_keep_matching_agents(viewer_client, corpus):
    result = viewer_client.get(reverse("runs:analysis"), {"group": "arm", "format": "json"}).json()
    expected = expected_by(corpus, lambda d: arm_group(d["programLanguage"], d["docViewTypes"], d["executionMode"]))
    assert "no arm: tool calling" in expected and "— · —" not in expected
    assert {g["group"]: g["turns"] for g in result["groups"]} == {k: e["turns"] for k, e in expected.items()}
    only = viewer_client.get(reverse("runs:analysis"), {"group": "docViewTypes", "language": "java",
                                                        "format": "json"}).json()
    java = expected_by(corpus, lambda d: d["docViewTypes"] if d["programLanguage"] == "java" else None)
    java.pop("—")
    assert {g["group"]: g["agents"] for g in only["groups"]} == {k: e["agents"] for k, e in java.items()}


def test_capability_param_mode_and_prefix_groups(viewer_client, corpus):
    def groups(group):
        return {g["group"]: g for g in viewer_client.get(
            reverse("runs:analysis"), {"group": group, "format": "json"}).json()["groups"]}
    mode = groups("mode")
    assert sum(g["agents"] for g in mode.values()) == sum(len(build_report(r)["agents"]) for r in corpus)
    caps = groups("capability:memories")
    assert set(caps) <= {"on", "off", "absent"} and "on" in caps
    assert "\"isolated\"" in groups("param:memories.scope")
    prefix = groups("prefix")
    assert prefix["arms"]["runs"] == 2 and prefix["synthetic"]["runs"] == 1
    bad = viewer_client.get(reverse("runs:analysis"), {"group": "colour"})
    assert bad.status_code == 400 and "Cannot group by" in bad.content.decode()


def test_csv_carries_the_json_figures(viewer_client, corpus):
    data = viewer_client.get(reverse("runs:analysis"), {"group": "language", "format": "json"}).json()
    text = viewer_client.get(reverse("runs:analysis"), {"group": "language", "format": "csv"}).content.decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert [r["group"] for r in table] == [g["group"] for g in data["groups"]]
    for r, g in zip(table, data["groups"]):
        assert int(r["turns"]) == g["turns"] and int(r["calls"]) == g["calls"]
        for op, n in g["callsByOperation"].items():
            assert int(r[f"calls:{op}"]) == n


def test_the_page_shows_a_table_and_charts(viewer_client, corpus):
    html = viewer_client.get(reverse("runs:analysis"), {"group": "language"}).content.decode()
    assert {k for k, _ in rows(html, "data-group")} >= {"python", "java", "rust"}
    assert "<svg" in html and 'data-chart="errorTurnRate"' in html


def test_queries_do_not_grow_with_runs(viewer_client, corpus):
    def count():
        with CaptureQueriesContext(connection) as ctx:
            assert viewer_client.get(reverse("runs:analysis"), {"group": "language"}).status_code == 200
        return len(ctx.captured_queries)
    few = count()
    for i in range(5):
        import_stream(STREAMS / "multi_agent.ndjson", f"more-{i}")
    assert count() == few <= 9  # the groups' runs in the list: one count for all


def test_a_rate_too_small_for_a_tenth_of_a_percent_is_not_read_as_none(viewer_client):
    """1 error turn in 2,987 read "0.0%" beside a full-width bar (the only group with any)."""
    run = Run.objects.create(name="rare-errors")
    turns = []
    for n in range(1, 2988):
        outcome = {"outcome": "error", "error": "model_api", "errorType": "model_error"} if n == 2987 else \
            {"outcome": "progressed"}
        turns += [{"agentId": "root", "type": "turn_started"},
                  {"agentId": "root", "type": "turn_outcome", "turns": n, "consecutiveErrors": 0, **outcome}]
    ingest.append(run, turns)
    html = viewer_client.get(reverse("runs:analysis"), {"group": "mode"}).content.decode()
    chart = html[html.index('data-chart="errorTurnRate"'):]
    chart = chart[:chart.index("</figure>")]
    assert "scale 0 – 0.033%" in chart and ">0.033%</text>" in chart


@pytest.mark.parametrize("group", ["arm", "language", "mode", "docViewTypes", "profile", "prefix"])
def test_each_groups_runs_open_the_list_filtered_to_those_runs(viewer_client, corpus, group):
    result = viewer_client.get(reverse("runs:analysis"), {"group": group, "format": "json"}).json()
    html = viewer_client.get(reverse("runs:analysis"), {"group": group}).content.decode()
    table = html[html.index('id="analysis-table"'):html.index("</table>", html.index('id="analysis-table"'))]
    hrefs = links(table, "data-group")
    linked = 0
    for g in result["groups"]:
        href = next((h for h in hrefs[g["group"]] if "refusals=yes" not in h), None)
        if href is None:
            assert g["group"] in ("—", "no arm: no surface reported"), g["group"]
            continue
        listed = len(rows(viewer_client.get(href).content, "data-run"))
        superset = f'class="superset" title="the list\'s filters pick {listed} runs' in table
        assert listed == g["runs"] or (group == "arm" and listed > g["runs"] and superset), (g["group"], href)
        refusals = [h for h in hrefs[g["group"]] if "refusals=yes" in h]
        assert bool(refusals) == bool(g["refusals"])
        if refusals:
            with_refusals = rows(viewer_client.get(refusals[0]).content, "data-run")
            assert 0 < len(with_refusals) <= listed
        linked += 1
    assert linked >= 1
