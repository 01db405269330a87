"""Compare two runs: launched runs of the same demo with one capability changed — the declared diff
names exactly that change, and every delta is the difference of the two reports."""

import json
import re
from collections import Counter
from datetime import datetime

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.across.compare import Side, agent_calls, compare_runs, refused_by_operation, structural_diff
from runs.across.views import PAIRS_SHOWN, UNPAIRED_SHOWN
from runs.demo import DEMO_DIR
from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.report import agent_docs, build_report
from runs.templatetags.across import figure_href
from tests.pages_helpers import rows, synthetic_stream
from tests.streams import STREAM_FIXTURES, STREAMS, import_stream

pytestmark = pytest.mark.django_db


def launch(tmp_path, name, change=None) -> Run:
    spec = json.loads((DEMO_DIR / "code-root.spec.json").read_text())
    if change:
        change(spec)
    path = tmp_path / f"{name}.spec.json"
    path.write_text(json.dumps(spec))
    call_command("launch", str(path), "--name", name, "--wait", stdout=open("/dev/null", "w"))
    return Run.objects.get(name=name)


def no_compaction(spec):
    coder = spec["agents"][0]
    next(c for c in coder["capabilities"] if c["id"] == "compaction")["enabled"] = False


@pytest.fixture
def launched(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    return launch(tmp_path, "base"), launch(tmp_path, "no-compaction", no_compaction)


def test_the_diff_names_exactly_the_changed_capability(viewer_client, launched):
    a, b = launched
    result = viewer_client.get(reverse("runs:api_compare"), {"a": a.pk, "b": b.name}).json()
    assert result["declared"] == [{"path": "agents[coder].capabilities[compaction].enabled",
                                   "change": "changed", "a": True, "b": False}]


def _report_total(report):
    run = report["run"]
    return {"turns": run["counts"]["turns"], "errorTurns": run["counts"]["errorTurns"], "calls": run["counts"]["calls"],
            "agents": run["counts"]["agents"], "divergences": run["counts"]["divergences"],
            "stores": len(report["stores"]), "cost": run["usage"]["cost"].get("comparable"),
            "durationSeconds": run["durationSeconds"]}


def _delta(x, y):
    return None if x is None and y is None else (y or 0) - (x or 0)


def test_every_delta_is_the_difference_of_the_two_reports(viewer_client, launched):
    a, b = launched
    ra, rb = build_report(a), build_report(b)
    result = viewer_client.get(reverse("runs:api_compare"), {"a": a.pk, "b": b.pk}).json()
    total = {(r["figure"], r["key"]): r for r in result["total"]}
    for figure, value in _report_total(ra).items():
        row = total[(figure, "")]
        assert (row["a"], row["b"]) == (value, _report_total(rb)[figure]), figure
        assert row["delta"] == _delta(row["a"], row["b"]), figure
    for cls in ("uncachedInput", "cachedInput", "output", "reasoning"):
        row = total[("tokens", cls)]
        assert (row["a"], row["b"]) == (ra["run"]["usage"]["tokens"].get(cls), rb["run"]["usage"]["tokens"].get(cls))
    for kind in set(ra["run"]["errorTurnsByKind"]) | set(rb["run"]["errorTurnsByKind"]):
        row = total[("errorTurnsByKind", kind)]
        assert row["delta"] == rb["run"]["errorTurnsByKind"].get(kind, 0) - ra["run"]["errorTurnsByKind"].get(kind, 0)
    for op in {r["operation"] for r in ra["refusalTotals"] + rb["refusalTotals"]}:
        row = total[("refusalsByOperation", op)]
        want = {r["operation"]: r["refused"] for r in rb["refusalTotals"]}.get(op, 0) - {
            r["operation"]: r["refused"] for r in ra["refusalTotals"]}.get(op, 0)
        assert row["delta"] == want
    # Agents pair by profile and role; per pair, the figures are each side's report agent.
    docs_a = {d["agentId"]: d for d in ra["agents"]}
    docs_b = {d["agentId"]: d for d in rb["agents"]}
    assert result["pairs"] and not result["unpairedA"] and not result["unpairedB"]
    for pair in result["pairs"]:
        x, y = docs_a[pair["a"]["agentId"]], docs_b[pair["b"]["agentId"]]
        assert (x["profileId"], x["role"]) == (y["profileId"], y["role"])
        figures = {(r["figure"], r["key"]): r for r in pair["figures"]}
        for figure in ("turns", "errorTurns", "calls"):
            assert figures[(figure, "")]["delta"] == y[figure] - x[figure]
        assert figures[("durationSeconds", "")]["delta"] == _delta(x["durationSeconds"], y["durationSeconds"])
        # Every offered entry keeps its figure, zeros included (the seeds' join).
        offered = {fn["operation"]: fn["calls"] for api in x["surface"]["apis"] for fn in api["functions"]}
        offered.update({t["name"]: t["calls"] for t in x["surface"]["tools"]})
        for key, calls in offered.items():
            assert figures[("callsByOperation", key)]["a"] == calls
        assert 0 in offered.values()
    # The calls per operation in total are the sum over the agents of each side.
    for (figure, key), row in total.items():
        if figure == "callsByOperation":
            assert row["a"] == sum(agent_calls_of(d).get(key, 0) for d in ra["agents"])


def agent_calls_of(doc):
    from runs.across.compare import agent_calls
    return agent_calls(doc)


def test_the_page_links_each_side_to_its_run_and_agents(viewer_client, launched):
    a, b = launched
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert reverse("runs:detail", args=[a.pk]) in html and reverse("runs:detail", args=[b.pk]) in html
    for run in (a, b):
        for agent in run.agents.all():
            assert reverse("runs:agent", args=[run.pk, agent.agent_id]) in html
    assert [p for p, _ in rows(html, "data-path")] == ["agents[coder].capabilities[compaction].enabled"]


def test_compare_two_agents_of_one_run(viewer_client):
    run, _ = import_stream(STREAMS / "multi_agent.ndjson", "arms")
    report = build_report(run)
    x, y = [d for d in report["agents"] if d["programLanguage"]][:2]
    result = viewer_client.get(reverse("runs:api_compare"), {"a": run.pk, "b": run.pk, "agent_a": x["agentId"],
                                                             "agent_b": y["agentId"]}).json()
    assert result["kind"] == "agents" and result["agentA"]["agentId"] == x["agentId"]
    figures = {(r["figure"], r["key"]): r for r in result["figures"]}
    assert figures[("turns", "")]["delta"] == y["turns"] - x["turns"]
    assert figures[("errorTurns", "")]["delta"] == y["errorTurns"] - x["errorTurns"]
    response = viewer_client.get(reverse("runs:compare"), {"a": run.pk, "b": run.pk, "agent_a": x["agentId"],
                                                          "agent_b": "nobody"})
    assert response.status_code == 404 and "has no agent" in response.content.decode()


@pytest.mark.parametrize("stream", ["multi_agent", "legacy", "real-mock-session", "synthetic"])
def test_an_agents_document_read_alone_is_its_document_in_the_report(stream):
    """What two agents' comparison reads (their documents alone: their roster rows, refusals and
    predecessor's name read for them) is what the whole report says of them."""
    if stream == "synthetic":
        run = Run.objects.create(name="refusing")
        ingest.append(run, synthetic_stream(400))
    else:
        run, _ = import_stream(STREAM_FIXTURES[stream], stream)
    report = build_report(run)
    assert any(doc["predecessor"] for doc in report["agents"]) == (stream in ("multi_agent", "legacy"))
    for doc in report["agents"]:
        assert agent_docs(run, [doc["agentId"]]) == [doc]


def test_an_agents_page_compares_it_with_another_agent_of_its_run_or_another(viewer_client):
    run, _ = import_stream(STREAMS / "multi_agent.ndjson", "arms")
    other = next(a for a in run.agents.values_list("agent_id", flat=True) if a != "root")
    html = viewer_client.get(reverse("runs:agent", args=[run.pk, "root"])).content.decode()
    form = re.search(r'<form method="get" action="([^"]*)" class="compare-with".*?</form>', html, re.S)
    assert form and form.group(1) == reverse("runs:compare")
    sent = dict(re.findall(r'name="(\w+)"(?: value="([^"]*)")?', form.group(0)))
    assert sent == {"a": str(run.pk), "agent_a": "root", "agent_b": "", "b": str(run.pk)}  # this run, by default
    page = viewer_client.get(form.group(1), {**sent, "agent_b": other})
    assert page.status_code == 200 and "The two agents" in page.content.decode()


def test_two_agents_comparison_reads_two_agents():
    run = Run.objects.create(name="wide")
    ingest.append(run, [{"type": "agent_spawned", "agentId": f"w{i}", "profileId": "worker", "depth": 0}
                        for i in range(40)])
    side = Side(run, ["w3", "w30"])
    assert [a["doc"]["agentId"] for a in side.agents] == ["w3", "w30"] and not hasattr(side, "report")
    assert len(Side(run).agents) == 40


def test_unknown_runs_and_missing_parameters(viewer_client):
    assert viewer_client.get(reverse("runs:api_compare"), {"a": "x", "b": "y"}).status_code == 404
    assert viewer_client.get(reverse("runs:api_compare")).status_code == 400
    blank = viewer_client.get(reverse("runs:compare"))
    assert blank.status_code == 200 and 'id="compare-hint"' in blank.content.decode()
    assert 'id="compare-error"' not in blank.content.decode()


def test_compare_errors_name_the_field(viewer_client):
    """Each refusal names the field it is about and why; the blank form offers the latest runs."""
    run = Run.objects.create(name="<one>")
    page = viewer_client.get(reverse("runs:compare")).content.decode()
    assert f'<option value="{run.pk}">&lt;one&gt;</option>' in page
    for query, status, said in [
            ({"a": run.pk}, 400, "Run b (?b=) is empty"),
            ({"a": " ", "b": run.pk}, 400, "Run a (?a=) is empty"),
            ({"a": run.pk, "b": "nope"}, 404, "Run b (?b=): no run has the id or name &#x27;nope&#x27;"),
            ({"a": run.pk, "b": run.pk, "agent_b": "root"}, 400, "Agent of a (?agent_a=) is empty")]:
        response = viewer_client.get(reverse("runs:compare"), query)
        assert response.status_code == status and said in response.content.decode(), query
        assert said.replace("&#x27;", "'") in viewer_client.get(reverse("runs:api_compare"), query).json()["error"]


def test_structural_diff_matches_lists_by_name_and_scalars_as_sets():
    a = {"agents": [{"slug": "x", "tools": ["a", "b"]}, {"slug": "y"}], "limits": {"maxTurns": 3}}
    b = {"agents": [{"slug": "y"}, {"slug": "x", "tools": ["b", "c"]}], "limits": {"maxTurns": 4}, "provider": "p"}
    assert structural_diff(a, b) == [
        {"path": "agents[x].tools", "change": "removed", "a": "a", "b": None},
        {"path": "agents[x].tools", "change": "added", "a": None, "b": "c"},
        {"path": "limits.maxTurns", "change": "changed", "a": 3, "b": 4},
        {"path": "provider", "change": "added", "a": None, "b": "p"},
    ]


def test_compare_queries_do_not_grow_with_events(viewer_client):
    def count(n):
        a, b = Run.objects.create(name=f"a{n}"), Run.objects.create(name=f"b{n}")
        ingest.append(a, synthetic_stream(n))
        ingest.append(b, synthetic_stream(n))
        with CaptureQueriesContext(connection) as ctx:
            assert viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).status_code == 200
        return len(ctx.captured_queries)
    assert count(300) == count(3000)


def test_each_pair_links_to_its_own_agent_comparison(viewer_client):
    a, _ = import_stream(STREAMS / "multi_agent.ndjson", "left")
    b, _ = import_stream(STREAMS / "multi_agent.ndjson", "right")
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    links = [part.split('"')[0].replace("&amp;", "&") for part in html.split('class="compare-agents"')[0:1]
             for part in part.rsplit('href="', 1)[1:]]
    assert links and "agent_a=" in links[0]
    result = viewer_client.get(reverse("runs:api_compare") + links[0]).json()
    assert result["kind"] == "agents" and result["agentA"]["agentId"] == result["agentB"]["agentId"]
    assert all(r["delta"] in (0, None) for r in result["figures"])  # the same stream twice


def _spans(lines) -> dict:
    """{agentId: seconds from its first record's stamp to its last's}, read off the stream itself."""
    stamps = {}
    for line in lines:
        rec = json.loads(line)
        stamps.setdefault(rec["agentId"], []).append(datetime.fromisoformat(rec["timestamp"][:26] + "+00:00"))
    return {agent: (ts[-1] - ts[0]).total_seconds() for agent, ts in stamps.items()}


@pytest.fixture
def longer_and_shorter(tmp_path):
    """The multi-agent stream whole (a) and cut after its first 200 records (b): the same agents,
    each running for less time in b."""
    lines = (STREAMS / "multi_agent.ndjson").read_text().splitlines()
    cut = tmp_path / "shorter.ndjson"
    cut.write_text("\n".join(lines[:200]) + "\n")
    (a, _), (b, _) = import_stream(STREAMS / "multi_agent.ndjson", "longer"), import_stream(cut, "shorter")
    return (a, lines), (b, lines[:200])


def test_each_pair_and_the_total_compare_duration_as_the_two_reports_differ(viewer_client, longer_and_shorter):
    (a, lines_a), (b, lines_b) = longer_and_shorter
    ra, rb = build_report(a), build_report(b)
    for report, lines in ((ra, lines_a), (rb, lines_b)):  # an agent's duration: its first stamp to its last
        assert {d["agentId"]: d["durationSeconds"] for d in report["agents"]} == pytest.approx(_spans(lines), abs=1e-5)
    result = viewer_client.get(reverse("runs:api_compare"), {"a": a.pk, "b": b.pk}).json()
    docs_a, docs_b = ({d["agentId"]: d for d in r["agents"]} for r in (ra, rb))
    assert len(result["pairs"]) >= 3
    for pair in result["pairs"]:
        row = {(r["figure"], r["key"]): r for r in pair["figures"]}[("durationSeconds", "")]
        x, y = docs_a[pair["a"]["agentId"]]["durationSeconds"], docs_b[pair["b"]["agentId"]]["durationSeconds"]
        assert (row["a"], row["b"], row["delta"]) == (x, y, y - x)
    assert any(r["delta"] < 0 for p in result["pairs"] for r in p["figures"] if r["figure"] == "durationSeconds")
    total = {(r["figure"], r["key"]): r for r in result["total"]}[("durationSeconds", "")]
    assert total["delta"] == rb["run"]["durationSeconds"] - ra["run"]["durationSeconds"] < 0
    # and on the page: a duration row in the total and in every pair
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert len([f for f, _ in rows(html, "data-figure") if f == "durationSeconds"]) == 1 + len(result["pairs"])


def test_each_side_links_to_its_agents_turn_pages(viewer_client, longer_and_shorter):
    (a, _), (b, _) = longer_and_shorter
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    for run in (a, b):
        for agent in run.agents.filter(turns__gt=0):
            assert reverse("runs:turn", args=[run.pk, agent.agent_id, 1]) in html, agent.agent_id
            assert reverse("runs:turn", args=[run.pk, agent.agent_id, agent.turns]) in html, agent.agent_id
            assert viewer_client.get(reverse("runs:turn", args=[run.pk, agent.agent_id, agent.turns])).status_code == 200
    # two agents side by side link their turns the same way
    root = a.agents.get(agent_id="root")
    html = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk, "agent_a": "root",
                                                      "agent_b": "root"}).content.decode()
    assert reverse("runs:turn", args=[a.pk, "root", root.turns]) in html


def test_turn_links_show_every_turn_up_to_twelve_then_the_first_ten_and_last_two():
    from runs.templatetags.across import turn_numbers

    assert turn_numbers(0) == [] and turn_numbers(None) == [] and turn_numbers(3) == [1, 2, 3]
    assert turn_numbers(12) == list(range(1, 13))
    assert turn_numbers(900) == [*range(1, 11), None, 899, 900]


def test_turn_links_are_the_turn_pages_urls_formed_from_one_reverse():
    from runs.access import turn_url
    from runs.templatetags.across import turn_links

    for agent_id in ("root", "agent 1/1", "é/turns/1", "a%2F"):
        assert turn_links(7, agent_id, 900) == [
            (t, turn_url(7, agent_id, t)) if t else (None, "") for t in [*range(1, 11), None, 899, 900]]
    assert turn_links(7, "", 3) == [(1, ""), (2, ""), (3, "")]  # an id no URL carries: no links


def test_an_agents_refusals_are_compared_in_full_not_as_the_rows_the_report_lists():
    """The report lists each refusal group's first rows only; the comparison counts every refusal."""
    run = Run.objects.create(name="refusing")
    ingest.append(run, synthetic_stream(400))
    report = build_report(run)
    total = Counter()
    for doc in report["agents"]:
        total.update(refused_by_operation(doc))
    assert total == Counter({r["operation"]: r["refused"] for r in report["refusalTotals"]})
    assert sum(total.values()) > sum(len(doc["refusals"]) for doc in report["agents"])  # past the listed rows


def test_two_runs_of_many_agents_page_the_pairs_and_the_unpaired(viewer_client):
    """A pair a profile and role: 60 workers in each run pair; a's 120 helpers and b's 3 reviewers pair
    with none. The page shows 50 pairs a page and 100 of each side's unpaired; its JSON lists them all."""
    def run(name, agents):
        made = Run.objects.create(name=name)
        ingest.append(made, [{"type": "agent_spawned", "agentId": a, "profileId": p, "depth": 0} for a, p in agents])
        return made
    a = run("wide-a", [(f"w{i}", "worker") for i in range(60)] + [(f"h{i}", "helper") for i in range(120)])
    b = run("wide-b", [(f"w{i}", "worker") for i in range(60)] + [(f"r{i}", "reviewer") for i in range(3)])
    query = f"a={a.pk}&b={b.pk}"
    html = viewer_client.get(reverse("runs:compare") + "?" + query).content.decode()
    assert html.count('class="panel figures-pair"') == 1 + PAIRS_SHOWN  # the whole run, then the pairs
    assert "Pairs 1–50 of 60, agents paired by profile and role" in html
    assert "Pair 50 · worker" in html and "Pair 51 " not in html
    later = re.search(r'id="pairs-later" href="\?([^"]+)"', html).group(1).replace("&amp;", "&")
    assert later == f"{query}&pairs=50#pairs"
    rest = viewer_client.get(reverse("runs:compare") + "?" + later.removesuffix("#pairs")).content.decode()
    assert rest.count('class="panel figures-pair"') == 1 + 10 and "Pairs 51–60 of 60" in rest
    assert "Pair 51 · worker" in rest and "Pair 50 " not in rest and 'id="pairs-earlier" href="?' in rest
    assert rest.count('data-figure="turns"') == 11  # the whole run's turns, then each of the ten pairs'
    assert html.count("<b>only in a</b>") == UNPAIRED_SHOWN and "Only in a 1–100 of 120" in html
    assert html.count("<b>only in b</b>") == 3 and 'id="only-b-pages"' not in html
    assert "120 only in a, 3 only in b" in html
    # Each list pages on its own: the rest of a's, the page of pairs kept.
    later = re.search(r'id="only_a-later" href="\?([^"]+)"', rest).group(1).replace("&amp;", "&")
    assert later == f"{query}&pairs=50&only_a=100#unpaired"
    tail = viewer_client.get(reverse("runs:compare") + "?" + later.removesuffix("#unpaired")).content.decode()
    assert tail.count("<b>only in a</b>") == 20 and "Only in a 101–120 of 120" in tail and "Pair 51 · worker" in tail
    assert tail.count("<b>only in b</b>") == 3
    whole = viewer_client.get(reverse("runs:api_compare") + "?" + query).json()
    assert len(whole["pairs"]) == 60 and len(whole["unpairedA"]) == 120


def test_a_run_compared_with_itself_reads_its_report_once():
    """Each side is read off its run's report; a run beside itself is one side, built once."""
    run, twin = Run.objects.create(name="itself"), Run.objects.create(name="twin")
    for r in (run, twin):
        ingest.append(r, synthetic_stream(300))
    with CaptureQueriesContext(connection) as two:
        compare_runs(run, twin)
    with CaptureQueriesContext(connection) as one:
        beside = compare_runs(run, run)
    assert len(one.captured_queries) < 0.6 * len(two.captured_queries)
    figures = beside["total"] + [row for pair in beside["pairs"] for row in pair["figures"]]
    assert beside["pairs"] and all(row["a"] == row["b"] and row["delta"] in (0, None) for row in figures)


def test_runs_that_declared_nothing_are_not_declared_identically(viewer_client):
    a, b = (import_stream(STREAMS / "legacy.ndjson", name)[0] for name in ("bare-a", "bare-b"))  # no capabilitySet
    page = viewer_client.get(reverse("runs:compare"), {"a": a.pk, "b": b.pk}).content.decode()
    assert "Neither run declared its configuration" in page and "Declared identically" not in page
    assert compare_runs(a, b)["undeclared"] == ["a", "b"]
    c, _ = import_stream(STREAMS / "multi_agent.ndjson", "declared")
    page = viewer_client.get(reverse("runs:compare"), {"a": c.pk, "b": b.pk}).content.decode()
    assert "Run b declared no configuration" in page and compare_runs(c, b)["undeclared"] == ["b"]
    assert compare_runs(c, c)["undeclared"] == [] and "Declared identically" in viewer_client.get(
        reverse("runs:compare"), {"a": c.pk, "b": c.pk}).content.decode()


@pytest.mark.parametrize("stream", ["multi_agent", "legacy", "real-mock-session", "synthetic"])
def test_a_side_reads_its_run_as_the_report_says_it(stream):
    """A side lists the agents in the report's order, named as their documents name them, and its run's
    figures are the report's: calls per operation summed over the documents, divergences and stores by
    kind in the report's order."""
    if stream == "synthetic":
        run = Run.objects.create(name="refusing")
        ingest.append(run, synthetic_stream(400))
    else:
        run, _ = import_stream(STREAM_FIXTURES[stream], stream)
    report, side = build_report(run), Side(run)
    assert [a["doc"] for a in side.agents] == [{k: doc[k] for k in a["doc"]}
                                               for a, doc in zip(side.agents, report["agents"], strict=True)]
    calls = Counter()
    for doc in report["agents"]:
        calls.update(agent_calls(doc))
    by_kind = {"callsByOperation": calls, "divergencesByKind": Counter(d["kind"] for d in report["divergences"]),
               "storesByKind": Counter(s["kind"] for s in report["stores"]),
               "refusalsByOperation": {r["operation"]: r["refused"] for r in report["refusalTotals"]}}
    for figure, want in by_kind.items():
        assert list(side.figures[figure].items()) == list(want.items()), figure
    assert calls and side.figures["stores"] == len(report["stores"])
    assert side.figures["divergences"] == report["run"]["counts"]["divergences"]


def test_a_page_of_pairs_reads_whole_only_the_agents_it_shows(viewer_client):
    """The page reads what pairs and names every agent, and the documents of the pairs it shows alone:
    an agent's usage (what its figures read, with the rest of its row) is read for those agents only."""
    run = Run.objects.create(name="many")
    ingest.append(run, [{"type": "agent_spawned", "agentId": f"w{i}", "profileId": "worker", "depth": 0}
                        for i in range(3 * PAIRS_SHOWN)])
    with CaptureQueriesContext(connection) as queries:
        html = viewer_client.get(reverse("runs:compare"), {"a": run.pk, "b": run.pk}).content.decode()
    assert html.count('class="panel figures-pair"') == 1 + PAIRS_SHOWN
    whole = [q["sql"] for q in queries.captured_queries
             if 'FROM "runs_agent"' in q["sql"] and '"runs_agent"."usage"' in q["sql"]]
    assert whole and all(re.findall(r"'w\d+'", sql) == [f"'w{i}'" for i in range(PAIRS_SHOWN)] for sql in whole)


def test_an_agent_no_url_can_carry_gets_no_figure_link_to_its_page():
    """Its duration linked '#time' on the comparison itself, where the peak context gave no link."""
    assert figure_href(1, "durationSeconds", "", "a/../b") == figure_href(1, "peakContext", "", "a/../b") == ""
    assert figure_href(1, "durationSeconds", "", "root") == reverse("runs:agent", args=(1, "root")) + "#time"
