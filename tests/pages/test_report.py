"""The run report: manage.py report RUN --json and GET /api/runs/<run>/report, one document."""

import json
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import append
from runs.models import IngestToken, Run
from runs.pages import report
from tests.pages_helpers import load, rows

pytestmark = pytest.mark.django_db


def api(client, ref, **headers):
    return client.get(reverse("runs:api_report", args=[ref]), **headers)


def command(ref):
    out = StringIO()
    call_command("report", str(ref), "--json", stdout=out)
    return json.loads(out.getvalue())


def test_command_and_api_return_the_same_document(viewer_client, run):
    response = api(viewer_client, run.pk)
    assert response.status_code == 200 and response["Content-Type"] == "application/json"
    assert response.json() == command(run.pk) == command("pages")


def test_run_section(viewer_client, run):
    doc = api(viewer_client, "pages").json()
    r = doc["run"]
    assert (r["name"], r["source"], r["status"], r["live"]) == ("pages", "import", "completed", False)
    assert r["counts"] == {"records": 120, "rejected": 0, "agents": 7, "turns": 8, "calls": 21, "errorTurns": 1,
                           "divergences": 4, "refused": 3, "refusalsSuppressed": 3}
    assert r["errorTurnsByKind"] == {"program_fault": 1}
    assert r["errorTurnsByType"] == {"program_unknown_name": 1}
    assert r["apiFailures"] == {"not-found": 1, "unavailable": 3} and r["toolFailures"] == {"io-error": 1}
    # usage = the deltas; the slot_usage rollup (9999) is never added
    assert r["usage"]["source"] == "deltas"
    assert r["usage"]["tokens"]["uncachedInput"] == 3200 and r["usage"]["cost"]["comparable"] == pytest.approx(0.033)


def test_agents_section(viewer_client, run):
    agents = {a["agentId"]: a for a in api(viewer_client, run.pk).json()["agents"]}
    assert list(agents) == ["root", "helper-1", "root.f1", "writer-a", "writer-b", "writer-c", "AUTH-1.0r"]
    root = agents["root"]
    assert (root["profileId"], root["executionMode"], root["programLanguage"], root["docViewTypes"], root["turns"]) == (
        "root", "responses_as_code", "python", "return+errors", 2)
    assert root["holdings"][1] == {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created",
                                   "writable": True, "scope": "isolated", "ownership": None}
    assert len(root["holdings"]) == 6
    memories = next(a for a in root["surface"]["apis"] if a["module"] == "memories")
    assert memories["functions"] == [
        {"name": "read_memory", "operation": "memories.read_memory", "spelling": "gg.memories.read_memory", "calls": 1},
        {"name": "write_memory", "operation": "memories.write_memory", "spelling": "gg.memories.write_memory", "calls": 0},
        {"name": "MemoryHit.read", "operation": "memories.read_memory", "spelling": "gg.memories.MemoryHit.read", "calls": 1},
    ]
    assert root["surface"]["tools"] == []
    assert [(x["turn"], x["operation"], x["spelling"], x["failure"]) for x in root["refusals"]] == [
        (1, "board.create_issue", "gg.board.create_issue", "unavailable"),
        (2, "shell.shell", "gg.shell.shell", "unavailable"), (2, "shell.shell", "gg.shell.shell", "unavailable")]
    assert root["refusalsSuppressed"] == [{"turn": 2, "count": 3}]
    assert (root["errorTurnsByKind"], root["errorTurnsByType"]) == ({"program_fault": 1}, {"program_unknown_name": 1})
    assert (root["suspendedSeconds"], root["blockedSince"]) == (0.0, None)
    assert root["contextBands"] == {"system": 2400, "user_prompt": 600, "docs_view": 1050, "search_results": 150,
                                    "memory": 80, "history": 500}
    assert root["lastContext"] == {"bands": {"system": 1200, "user_prompt": 300, "docs_view": 600,
                                             "search_results": 150, "memory": 40, "history": 500},
                                   "totalTokens": 2790, "windowLimit": 100000, "fullness": 0.0279}
    assert (agents["writer-b"]["predecessor"], agents["writer-b"]["transition"]) == ("writer-a", "exec")
    assert (agents["writer-c"]["transition"], agents["writer-c"]["fsmState"]) == ("fsm", "verify")
    assert (agents["root.f1"]["predecessor"], agents["root.f1"]["transition"], agents["root.f1"]["parentAgentId"]) == (
        "root", "fork", "root")
    reviewer = agents["AUTH-1.0r"]
    assert reviewer["surface"]["tools"] == [{"name": "read_file", "calls": 2}, {"name": "shell", "calls": 1},
                                            {"name": "wait_for_issue", "calls": 0}, {"name": "approve", "calls": 1},
                                            {"name": "request_changes", "calls": 0}]
    assert reviewer["surface"]["apis"] == [] and reviewer["refusals"] == []


def test_stores_and_divergences_match_the_pages(viewer_client, run):
    doc = api(viewer_client, run.pk).json()
    stores = {s["moduleId"]: s for s in doc["stores"]}
    stores_page = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    assert list(stores) == [s for s, _ in rows(stores_page, "data-store")]
    m0 = stores["memories-0"]
    assert [(h["agentId"], h["origin"], h["costTokens"]) for h in m0["holders"]] == [
        ("root", "created", 40), ("root.f1", "forked", 0)]
    assert [h["costTokens"] for h in stores["board-0"]["holders"]] == [None, None, None]
    # the one store released: memories-2, swapped away under writer-a's successor
    assert [(s["moduleId"], s["releasedBy"]) for s in doc["stores"] if s["dropped"] or s["releasedBy"]] == [
        ("memories-2", ["writer-a"])]
    assert [(e["event"], e["agentId"]) for e in m0["lifetime"]] == [("created", "root"), ("linked", "root.f1")]
    assert stores["memories-2"]["contents"]["memories"][0]["name"] == "plan"
    assert [(e["event"], e["otherModuleId"]) for e in stores["memories-2"]["lifetime"]] == [
        ("created", None), ("swapped", "memories-3")]
    page = viewer_client.get(reverse("runs:divergences", args=[run.pk])).content.decode()
    assert [(d["kind"], d["agentId"]) for d in doc["divergences"]] == [
        (kind, agent) for (kind, _), (agent, _) in zip(rows(page, "data-divergence"), rows(page, "data-agent"))]
    assert set(doc["divergences"][0]) == {"kind", "agentId", "moduleKind", "declared", "observed", "cause"}


def test_clocks_errors_and_dropped_stores_on_the_multi_agent_run(viewer_client):
    doc = api(viewer_client, load("multi", "multi_agent.ndjson").pk).json()
    assert doc["run"]["errorTurnsByType"] == {"model_length_capped": 1, "program_throw": 2, "transpile_syntax": 1}
    agents = {a["agentId"]: a for a in doc["agents"]}
    assert agents["root"]["suspendedSeconds"] == 16.577
    assert doc["run"]["waitingSeconds"] == 16.577 and doc["run"]["agentsByStatus"] == {"done": 6, "failed": 1}
    assert agents["agent-2"]["errorTurnsByType"] == {"program_throw": 2}
    stores = {s["moduleId"]: s for s in doc["stores"]}
    assert (stores["tasks-1"]["dropped"], stores["tasks-1"]["releasedBy"]) == (True, ["agent-1"])
    assert [h["costTokens"] for h in stores["history-2"]["holders"]] == [1400, 1800]
    assert [s for s, store in stores.items() if store["dropped"]] == ["tasks-1"]


def test_arms_in_the_report(viewer_client, run):
    arms = {(a["programLanguage"], a["docViewTypes"]): a for a in api(viewer_client, run.pk).json()["arms"]}
    python = arms[("python", "return+errors")]
    assert (python["agents"], python["docsViewTokens"], python["searchResultsTokens"]) == (["root"], 1050, 150)
    assert arms[("java", "none")]["agents"] == ["writer-a", "writer-b", "writer-c"]


def test_api_needs_a_login_or_a_token_and_names_a_missing_run(client, viewer, run):
    assert api(client, run.pk).status_code == 401
    token = IngestToken.objects.create(user=viewer)
    assert api(client, run.pk, HTTP_AUTHORIZATION=f"Bearer {token.key}").status_code == 200
    missing = api(client, "nope", HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert missing.status_code == 404 and missing.json() == {"error": "No run 'nope'."}


def test_command_names_a_missing_run_and_summarises_without_json(run):
    with pytest.raises(CommandError, match="No run 'nope'"):
        call_command("report", "nope")
    out = StringIO()
    call_command("report", "pages", stdout=out)
    text = out.getvalue()
    assert text.startswith("pages (completed): 7 agents, 8 turns, 21 calls, 1 error turns, 4 divergences, 3 refused")
    assert "divergence helper-1: scope: inherited -> origin: created (memories-1)" in text


def test_an_unreported_surface_in_the_report_is_not_an_empty_one(viewer_client):
    from tests.streams import REAL_MOCK, import_stream

    mock, _ = import_stream(REAL_MOCK)
    root = api(viewer_client, mock.pk).json()["agents"][0]
    assert root["surface"]["reported"] is False
    assert root["surface"]["unofferedCalls"] == []
    assert root["surface"]["callsWithoutSurface"] == [{"name": "write_file", "operation": "", "calls": 1}]


def test_the_report_counts_each_refused_call_and_lists_its_first_entries(viewer_client, run, monkeypatch):
    from runs.pages import refusals

    monkeypatch.setattr(refusals, "GROUP_ROWS_SHOWN", 1)
    root = api(viewer_client, run.pk).json()["agents"][0]
    assert root["refusalGroups"] == [
        {"operation": "shell.shell", "spelling": "gg.shell.shell", "refused": 2, "firstTurn": 2, "lastTurn": 2,
         "failures": {"unavailable": 2}},
        {"operation": "board.create_issue", "spelling": "gg.board.create_issue", "refused": 1, "firstTurn": 1,
         "lastTurn": 1, "failures": {"unavailable": 1}}]
    assert [(x["turn"], x["operation"]) for x in root["refusals"]] == [(1, "board.create_issue"), (2, "shell.shell")]


@pytest.mark.parametrize("fixture", ["pages_run.ndjson", "multi_agent.ndjson"])
def test_the_report_carries_the_figures_the_roster_refusals_and_arms_pages_show(viewer_client, fixture):
    run = load(fixture.split(".")[0], fixture)
    doc = api(viewer_client, run.pk).json()

    def page(name):
        return viewer_client.get(reverse(f"runs:{name}", args=[run.pk])).content.decode()

    roster = rows(page("agents"), "data-agent")
    assert [agent for agent, _ in roster] == [a["agentId"] for a in doc["agents"]]  # forest order
    for (_, text), a in zip(roster, doc["agents"]):
        turns, calls, error_turns = text.split()[-6:-3]
        assert (int(turns), int(calls), int(error_turns)) == (a["turns"], a["calls"], a["errorTurns"]), a["agentId"]

    totals = [(op, text.split()[-1]) for op, text in rows(page("refusals"), "data-operation") if text.startswith(op)]
    assert totals == [(t["operation"], str(t["refused"])) for t in doc["refusalTotals"]]

    arms = page("arms")
    assert [key for key, _ in rows(arms, "data-arm")] == [a["arm"] for a in doc["arms"]]
    figures = dict(rows(arms, "data-row"))
    assert figures["turns"].split()[1:] == [str(a["turns"]) for a in doc["arms"]]
    assert figures["error_turns"].split()[2:] == [str(a["errorTurns"]) for a in doc["arms"]]
    assert figures["calls"].split()[1:] == [str(sum(a["calls"].values())) for a in doc["arms"]]


def timed_calls(name, durations_us):
    """A run whose root makes one files.read_file call per duration (microseconds between its halves)."""
    from runs.ingest import writer as ingest
    from runs.models import Run

    records = [{"timestamp": "2026-07-24T04:00:00Z", "type": "agent_spawned", "agentId": "root", "depth": 0},
               {"timestamp": "2026-07-24T04:00:00Z", "type": "turn_started", "agentId": "root"}]
    for i, us in enumerate(durations_us):
        start = 10_000_000 * (i + 1)  # 10 s apart, in microseconds past 04:00:00
        for type_, at in (("api_call", start), ("api_result", start + us)):
            s, frac = divmod(at, 1_000_000)
            records.append({"timestamp": f"2026-07-24T{4 + s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}.{frac:06d}Z",
                            "type": type_, "agentId": "root", "operation": "files.read_file",
                            **({"ok": True} if type_ == "api_result" else {})})
    run = Run.objects.create(name=name)
    assert ingest.append(run, records).stored == len(records)
    return run


def test_latency_percentiles_come_off_counted_milliseconds_in_a_fixed_number_of_rows(viewer_client):
    """p50 / p95 are the nearest-rank ones over the calls' milliseconds to three significant figures,
    counted by the fold: the report reads no call time off the log, and a run of many calls of a few
    distinct durations keeps a few counts."""
    few = timed_calls("few", [12_345, 12_349, 250_000, 7_000])
    many = timed_calls("many", [12_345] * 300 + [250_000] * 40 + [7_000] * 100)
    read = {}
    for run in (few, many):
        with CaptureQueriesContext(connection) as captured:
            doc = api(viewer_client, run.pk).json()
        assert not [q["sql"] for q in captured if "call_ms" in q["sql"]]
        read[run.name] = len(captured)
        (row,) = doc["run"]["latency"]
        assert (row["name"], row["timed"]) == ("files.read_file", len(run.events.filter(type="api_result")))
        read[run.name, "p"] = row["p50Ms"], row["p95Ms"]
    assert read["few"] == read["many"]
    assert read["few", "p"] == (12.3, 250) and read["many", "p"] == (12.3, 250)
    counts = many.agents.get(agent_id="root").timing["ms"]["api|files.read_file"]
    assert counts == {"12.3": 300, "250": 40, "7": 100}


def memory_stream():
    """Three memory stores (memories-0 held by two live agents, memories-1 by one that returned,
    memories-2 never written), one run-wide tasks store, a history store each; memories-0 rewritten
    across two turns of root's and reported at gg's own peak."""
    def roster(agent, mems, **env):
        return {"agentId": agent, **env, "type": "agent_modules", "modules": [
            {"kind": "history", "moduleId": f"history-{agent}", "enabled": True, "origin": "created", "writable": True},
            {"kind": "memories", "moduleId": mems, "enabled": True, "origin": "created", "writable": True},
            {"kind": "tasks", "moduleId": "tasks-0", "enabled": True, "origin": "run", "writable": True}]}

    def breakdown(agent, memory, total):
        return {"agentId": agent, "type": "context_breakdown", "totalTokens": total,
                "bySource": [{"source": "memory", "tokens": memory}, {"source": "task_list", "tokens": 5}]}

    def revision(name, n, change, body, description=""):
        return {"type": "memory_revision", "name": name, "revision": n, "change": change, "description": description,
                "body": body, "len": len(body), "lines": body.count("\n") + 1 if body else 0}
    return [
        {"type": "agent_spawned", "profileId": "lead", "modelId": "m", "depth": 0},
        roster("root", "memories-0"), breakdown("root", 120, 1000),
        roster("w1", "memories-0", parentAgentId="root"), breakdown("w1", 80, 500),
        roster("w2", "memories-1", parentAgentId="root"), breakdown("w2", 40, 300),
        {"agentId": "w2", "type": "agent_returned", "summary": "done"},
        {"agentId": "w3", "type": "agent_spawned", "profileId": "w", "depth": 1}, roster("w3", "memories-2"),
        {"type": "turn_started"},
        revision("plan", 1, "written", "Read the <spec>.", "What to do"),
        {"type": "memory_state", "moduleId": "memories-0", "memories": [{"name": "plan", "len": 16, "lines": 1}],
         "count": 1, "totalLen": 16, "totalLines": 1},
        {"type": "turn_started"},
        revision("notes", 1, "written", "a\nb"),
        revision("plan", 2, "deleted", ""),
        {"type": "memory_state", "moduleId": "memories-0", "memories": [{"name": "notes", "len": 3, "lines": 2}],
         "count": 1, "totalLen": 3, "totalLines": 2, "peak": {"count": 2, "totalLen": 19, "totalLines": 3}},
        {"type": "memory_state", "moduleId": "memories-1", "memories": [], "count": 0, "totalLen": 0, "totalLines": 0},
        {"type": "tasks_state", "moduleId": "tasks-0", "tasks": [{"id": "t1", "title": "x", "status": "pending"}]},
    ]


def test_the_report_leads_each_module_kind_with_the_stores_tabs_overview(viewer_client):
    run = Run.objects.create(name="report-modules")
    append(run, memory_stream())
    modules = {m["kind"]: m for m in api(viewer_client, run.pk).json()["modules"]}
    out = StringIO()
    call_command("report", "report-modules", stdout=out)  # the summary says the same
    assert "  memories: 3 stores, 4 holders (3 live), 1 shared, 200 tokens a turn over live windows, 2 never written\n" in (
        out.getvalue())
    assert "  history: 4 stores, 4 holders (3 live), 0 shared, 1500 tokens a turn over live windows\n" in out.getvalue()
    assert list(modules) == ["history", "memories", "tasks"]  # gg's kind order
    # memories: four holders, three live (w2 returned), memories-0 held by two live agents; the per-turn
    # cost is root's 120 + w1's 80 (w3 reported none); memories-1 and -2 never written
    assert modules["memories"] == {"kind": "memories", "stores": 3, "holders": 4, "liveHolders": 3, "shared": 1,
                                   "costPerTurn": 200, "neverWritten": 2}
    assert modules["tasks"] == {"kind": "tasks", "stores": 1, "holders": 4, "liveHolders": 3, "shared": 1,
                                "costPerTurn": 10, "neverWritten": 0}
    # history is each agent's own window (its whole total), and nothing writes it: neither count applies
    assert modules["history"] == {"kind": "history", "stores": 4, "holders": 4, "liveHolders": 3, "shared": 0,
                                  "costPerTurn": 1500, "neverWritten": None}
    # the same figures the Stores tab leads each kind with
    page = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    part = page[page.index('data-overview="memories"'):]
    assert dict(rows(part[:part.index("</dl>")], "data-figure")) == {
        "stores": "3", "holders": "4", "live": "3", "shared": "1", "cost": "200 tokens", "unwritten": "2"}


def test_a_memory_stores_revision_history_and_peak_usage_are_in_the_report(viewer_client, monkeypatch):
    run = Run.objects.create(name="report-memories")
    stream = memory_stream()
    for i in range(0, len(stream), 4):  # chunk boundaries must not matter
        append(run, stream[i:i + 4])
    before = api(viewer_client, run.pk).json()
    rebuild_projections(run)
    doc = api(viewer_client, run.pk).json()
    assert doc == before  # the report reads the fold: rebuilt, the same document
    stores = {s["moduleId"]: s for s in doc["stores"]}
    m0 = stores["memories-0"]
    assert m0["peak"] == {"count": 2, "totalLen": 19, "totalLines": 3}  # gg's peak beats every snapshot
    assert m0["revisionCount"] == 3
    assert [(r["turn"], r["agentId"], r["memory"], r["revision"], r["change"], r["chars"], r["lines"])
            for r in m0["revisions"]] == [(1, "root", "plan", 1, "written", 16, 1), (2, "root", "notes", 1, "written", 3, 2),
                                          (2, "root", "plan", 2, "deleted", 0, 0)]
    assert (m0["revisions"][0]["description"], m0["revisions"][0]["bodyHead"]) == ("What to do", "Read the <spec>.")
    assert [r["seq"] for r in m0["revisions"]] == sorted(r["seq"] for r in m0["revisions"])
    # a store no memory_state named has no peak; one never written no revisions
    assert (stores["memories-1"]["peak"], stores["memories-1"]["revisionCount"]) == ({"count": 0, "totalLen": 0,
                                                                                      "totalLines": 0}, 0)
    assert (stores["memories-2"]["peak"], stores["memories-2"]["revisions"]) == (None, [])
    assert "peak" not in stores["tasks-0"] and "revisions" not in stores["history-root"]  # memories only
    # the store page lists the same history
    page = viewer_client.get(reverse("runs:store", args=[run.pk, "memories-0"])).content.decode()
    assert [c for c, _ in rows(page, "data-change")] == [r["change"] for r in m0["revisions"]]
    # a long history: the first few listed, all counted, in one query whatever the number of stores
    monkeypatch.setattr(report, "REVISIONS_LISTED", 2)
    with CaptureQueriesContext(connection) as captured:
        short = {s["moduleId"]: s for s in api(viewer_client, run.pk).json()["stores"]}["memories-0"]
    assert [r["memory"] for r in short["revisions"]] == ["plan", "notes"] and short["revisionCount"] == 3
    assert len([q for q in captured if "runs_memoryrevision" in q["sql"]]) == 2  # the counts, the first rows


def test_the_report_reads_no_record_of_the_log(viewer_client):
    """Every figure comes off the fold's projections: the agents' spans off their folded stamps, not
    their first and last records (a live run's header reads its last record, and no other)."""
    for run in (load("multi", "multi_agent.ndjson"), timed_calls("live", [12_345] * 3)):
        with CaptureQueriesContext(connection) as captured:
            doc = api(viewer_client, run.pk).json()
        read = [q["sql"] for q in captured if '"runs_event"' in q["sql"]]
        assert len(read) == (run.ended_at is None), read
        assert all(a["durationSeconds"] is not None for a in doc["agents"])
