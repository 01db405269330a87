"""The Agents tab and an agent's own page (runs/pages/agents.py): the roster as a forest, the
surface joined at the operation, holdings, failures, programs and context."""

import re

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.agents import AGENTS_SHOWN
from runs.pages.common import agent_values
from runs.pages.profiles import PROFILE_FIELDS
from tests.paths import GG_FIXTURES
from tests.pages_helpers import feed_rows_of, get, links, load, reads_of, rows

pytestmark = pytest.mark.django_db


def test_roster_is_the_forest_with_successions_and_forks_tagged(viewer_client, run):
    html = get(viewer_client, "agents", run.pk)
    roster = rows(html, "data-agent")
    assert [agent for agent, _ in roster] == ["root", "helper-1", "root.f1", "writer-a", "writer-b", "writer-c", "AUTH-1.0r"]
    assert 'data-agent="helper-1" data-level="1"' in html
    assert 'data-agent="root.f1" data-level="1"' in html
    assert 'data-agent="writer-b" data-level="1"' in html  # chained after writer-a, at its level
    assert 'data-agent="AUTH-1.0r" data-level="0"' in html  # board agent: top level
    text = dict(roster)
    assert "↳ fork" in text["root.f1"]
    assert "⇢ exec" in text["writer-b"]
    assert "⇢ fsm · verify" in text["writer-c"]
    # profile, model, mode, language, docViewTypes, role, status, turns, calls, error turns, failed calls, suspended
    assert text["root"].split() == ["root", "root", "vendor/big", "responses_as_code", "python", "return+errors",
                                    "standard", "done", "2", "9", "1", "4", "$0.03", "0.0s"]
    assert text["AUTH-1.0r"].split() == ["AUTH-1.0r", "reviewer", "vendor/small", "tool_calling", "—", "—",
                                         "review", "done", "1", "4", "0", "1", "$0.001", "0.0s"]
    # each figure links where it comes from (a 0 links nowhere)
    root = html[html.index('data-agent="root"'):html.index('data-agent="helper-1"')]
    feed, page = f"/runs/{run.pk}/feed/?agent=root", f"/runs/{run.pk}/agents/root/"
    assert re.findall(r'<a href="([^"]+)"[^>]*>(\d+)</a>', root) == [
        (f"{feed}&amp;kind=turn", "2"), (f"{page}#surface", "9"), (f"{page}#failed-calls", "1"),
        (f"{feed}&amp;kind=call&amp;failed=1", "4")]
    for query, figure in (("kind=turn", 2), ("kind=call&failed=1", 4)):  # the linked rows are the figure's
        assert viewer_client.get(f"/runs/{run.pk}/feed/rows?agent=root&{query}&after=0").json()["rows"] == figure
    reviewer = html[html.index('data-agent="AUTH-1.0r"'):html.index("</tr>", html.index('data-agent="AUTH-1.0r"'))]
    assert f'href="/runs/{run.pk}/feed/?agent=AUTH-1.0r&amp;kind=tool&amp;failed=1">1</a>' in reviewer
    assert "#failed-calls" not in reviewer  # no error turn


def test_chains_deeper_than_python_recurses_are_drawn_with_their_depth_said(viewer_client):
    """A stream may chain thousands of subagents (each spawned by the one before) and of exec
    successions: the Agents and Timeline pages walk the forest without recursion (1,200 levels were a
    RecursionError, a 500), and indent ten levels at most, saying the depth past that."""
    deep = 1200
    records = [{"type": "session_started", "agentId": "root", "timestamp": "2026-07-24T04:00:00Z"}]
    for i in range(1, deep + 1):
        records.append({"type": "agent_spawned", "agentId": f"s{i}", "parentAgentId": f"s{i - 1}" if i > 1 else "root",
                        "profileId": "p", "depth": i, "timestamp": "2026-07-24T04:00:01Z"})
    for i in range(1, deep + 1):
        records.append({"type": "agent_transition", "agentId": f"e{i - 1}" if i > 1 else "root", "kind": "exec",
                        "toAgentId": f"e{i}", "timestamp": "2026-07-24T04:00:02Z"})
        records.append({"type": "agent_spawned", "agentId": f"e{i}", "profileId": "p", "depth": 0,
                        "timestamp": "2026-07-24T04:00:02Z"})
    run = Run.objects.create(name="chains")
    ingest.append(run, records)
    # The roster in pages of AGENTS_SHOWN, each linking to the next.
    pages, url = [], reverse("runs:agents", args=(run.pk,))
    while url:
        pages.append(viewer_client.get(url).content.decode())
        later = re.search(r'id="agents-later" href="(\?agents=\d+)"', pages[-1])
        url = reverse("runs:agents", args=(run.pk,)) + later.group(1) if later else None
    size, last = AGENTS_SHOWN, (2 * deep) // AGENTS_SHOWN * AGENTS_SHOWN  # the last page's first index
    assert len(pages) == last // size + 1 and f"Agents 1–{size} of 2,401 in forest order" in pages[0]
    assert f"Agents {last + 1:,}–2,401 of 2,401" in pages[-1]
    assert f'id="agents-earlier" href="?agents={last - size}"' in pages[-1]
    order = [agent for page in pages for agent, _ in rows(page, "data-agent")]
    assert order == ["root", *(f"s{i}" for i in range(1, deep + 1)), *(f"e{i}" for i in range(1, deep + 1))]
    html = "".join(pages)
    assert f'data-agent="s{deep}" data-level="{deep}"' in html and 'data-agent="e900" data-level="0"' in html
    assert f'style="--level: 10"><span class="muted" title="nested {deep} levels deep">{deep} ›</span>' in html
    assert 'style="--level: 9"><a' in html  # s9: drawn at its own level, no depth said
    timeline = viewer_client.get(reverse("runs:timeline", args=(run.pk,)) + f"?lanes={deep}").content.decode()
    assert f"{deep}› s{deep}" in timeline


def test_suspended_time_on_the_roster_and_the_agent_page(viewer_client):
    multi = load("multi", "multi_agent.ndjson")
    roster = dict(rows(get(viewer_client, "agents", multi.pk), "data-agent"))
    # root was blocked on its subagents from 10:00:06.850 to 10:00:23.427
    assert roster["root"].split()[-1] == "16s" and roster["agent-0"].split()[-1] == "0.0s"
    html = get(viewer_client, "agent", multi.pk, "root")
    assert dict(rows(html, "id"))["suspended"] == "16s suspended (blocked)"


def test_code_agent_surface_counts_join_at_the_operation(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "root")
    modules = [m for m, _ in rows(html, "data-module")]
    assert modules == ["files", "memories", "docs", "views", "delegation", "session"]
    functions = rows(html, "data-operation")
    figures = [text for _, text in functions]
    assert "2× gg.files.read_file files.read_file" in figures
    assert "0× gg.files.write_file files.write_file" in figures  # offered, 0 calls: a measurement
    # two spellings of one operation carry the same figure
    assert "1× gg.memories.read_memory memories.read_memory" in figures
    assert "1× gg.memories.MemoryHit.read memories.read_memory" in figures
    assert "0× gg.session.finish session.finish" in figures  # ending calls have figures too
    assert 'class="zero" data-operation="files.write_file"' in html
    # what it called without being offered (refused calls), spelled by the rule: the operation id
    unoffered = html[html.index('id="unoffered-calls"'):html.index('id="not-offered"')]
    assert ">1×</a></td><td><code>board.create_issue</code>" in unoffered
    assert ">2×</a></td><td><code>shell.shell</code>" in unoffered


def test_agent_page_lists_reference_entries_not_offered(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "root")
    section = html[html.index('id="not-offered"'):].replace("<wbr>", "")  # wraps between parts only
    assert "40 operations" in section[:300]
    assert "gg.files.edit_file" in section and "gg.shell.shell" in section
    assert "gg.files.read_file" not in section  # offered, so not listed
    fork = get(viewer_client, "agent", run.pk, "root.f1").replace("<wbr>", "")
    assert "gg::files::edit_file" in fork  # the rust arm's spelling


def test_tool_agent_surface_in_offered_order_with_endings(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "AUTH-1.0r")
    tools = rows(html, "data-tool")
    assert [t for t, _ in tools] == ["read_file", "shell", "wait_for_issue", "approve", "request_changes"]
    assert [text for _, text in tools] == ["2× read_file", "1× shell", "0× wait_for_issue", "1× approve ending",
                                           "0× request_changes ending"]
    assert "io-error" in html[html.index('id="tool-failures"'):][:300]
    assert 'id="api-failures"' not in html  # tools and APIs are never mixed
    assert "create_issue" in html[html.index('id="not-offered"'):]


def test_agent_page_holdings_failures_programs_and_context(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "root")
    holdings = dict(rows(html, "data-kind"))
    assert holdings["memories"] == "memories memories-0 yes created yes isolated —"  # ownership unreported
    assert holdings["archive"] == "archive — off created yes — —"  # disabled kinds are rows too
    assert rows(html, "data-error-kind") == [("program_fault", "program_fault 1× program_unknown_name 1×")]
    api = html[html.index('id="api-failures"'):][:400]
    # the failed calls in the feed: as many rows as the classes count, and each class's as it counts
    assert f'id="api-failures-feed" href="/runs/{run.pk}/feed/?agent=root&amp;kind=call&amp;failed=1"' in html
    assert viewer_client.get(f"/runs/{run.pk}/feed/rows?agent=root&kind=call&failed=1&after=0").json()["rows"] == 4
    feed = f"/runs/{run.pk}/feed/?agent=root&amp;kind=call&amp;failed=1&amp;failure="
    for cls, n in (("unavailable", 3), ("not-found", 1)):
        assert f'{cls}</code> <a href="{feed}{cls}" title="these failed calls in the feed"><b>{n}×' in api
        query = f"agent=root&kind=call&failed=1&failure={cls}&after=0"
        assert viewer_client.get(f"/runs/{run.pk}/feed/rows?{query}").json()["rows"] == n
    programs = html[html.index('id="programs"'):]
    assert programs.count('class="program ok"') == 1 and programs.count('class="program failed"') == 1
    assert "ApiError: `gg.shell.shell` is not available" in programs
    # hostile program output is escaped
    assert "&lt;img src=x onerror=alert(1)&gt;" in programs and "<img src=x" not in html
    bars = rows(html, "data-turn")
    assert [turn for turn, _ in bars] == ["1", "2"]
    assert 'data-band="docs_view"' in html and 'data-band="history"' in html


def test_an_agent_without_a_surface_has_calls_but_nothing_called_unoffered(viewer_client):
    # the real recorded stream has no agent_surface: its write_file call is a call, not an
    # "unoffered" one (absent is not empty)
    mock = Run.objects.create(name="mock")
    ingest.append_lines(mock, (GG_FIXTURES / "real-mock-session.ndjson").read_bytes().splitlines())
    html = get(viewer_client, "agent", mock.pk, "root")
    assert 'id="unoffered-calls"' not in html and 'id="not-offered"' not in html
    assert ">1×</a></td><td><code>write_file</code>" in html[html.index('id="unjoined-calls"'):]


def test_an_older_code_surface_of_tool_names_shows_them_with_what_it_withheld(viewer_client):
    # mid-era: a responses_as_code surface listing tool names (no apis) and `withheld`; what it was
    # not offered is read against the tools it lists, not against every operation
    legacy = load("legacy", "legacy.ndjson")
    html = get(viewer_client, "agent", legacy.pk, "root")
    assert [key for key, _ in rows(html, "data-tool")] == ["read_file", "write_file", "finish"]
    assert "<code>shell</code>" in html[html.index('id="withheld"'):html.index("</p>", html.index('id="withheld"'))]
    not_offered = html[html.index('id="not-offered"'):]
    assert "tools</summary>" in not_offered and "<li><code>shell</code>" in not_offered
    assert "<li><code>read_file</code>" not in not_offered


def test_agent_page_for_an_unknown_agent_is_404(viewer_client, run):
    response = viewer_client.get(reverse("runs:agent", args=[run.pk, "nobody"]))
    assert response.status_code == 404


def test_helper_brief_is_escaped(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "helper-1")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html and "<script>alert(1)" not in html


def test_the_roster_reads_the_same_few_queries_whatever_the_agents(viewer_client):
    """Of each agent the roster, the profiles and the stores read, not its timing or context figures
    (most of a row's JSON on a run of thousands), and a field read beyond them costs a query an agent."""
    counts = []
    for n in (3, 40):
        run = Run.objects.create(name=f"roster-{n}")
        records = [{"type": "session_started", "agentId": "root"}]
        for i in range(n):
            records += [{"type": "agent_spawned", "agentId": f"a{i}", "profileId": "lead", "depth": 0},
                        {"type": "agent_modules", "agentId": f"a{i}", "modules": [
                            {"kind": "memories", "moduleId": f"memories-{i}", "enabled": True, "origin": "created",
                             "writable": True}]},
                        {"type": "agent_surface", "agentId": f"a{i}", "executionMode": "tool_calling",
                         "tools": ["read_file"]},
                        {"type": "turn_started", "agentId": f"a{i}"},
                        {"type": "tool_call", "agentId": f"a{i}", "name": "read_file", "args": {}},
                        {"type": "tool_result", "agentId": f"a{i}", "name": "read_file", "ok": False, "failure": "io"},
                        {"type": "usage", "agentId": f"a{i}", "tokens": {"input": 100, "output": 10}},
                        {"type": "context_breakdown", "agentId": f"a{i}", "totalTokens": 900,
                         "bySource": [{"source": "memory", "tokens": 40}]}]
        ingest.append(run, records)
        html, queries = reads_of(viewer_client, "agents", run, unread="timing")
        counts.append(queries)
        assert len(rows(html, "data-agent")) == n + 1  # and root
        assert f"read_file {n}×" in dict(rows(html, "data-profile"))["lead"]  # offered to each, called by each
        # the profiles' read decodes a surface the agents share once (root's, with no tools, and the others')
        assert len({id(m.tools) for m in agent_values(run, PROFILE_FIELDS)}) == 2
    assert counts[0] == counts[1]


def test_agent_values_reads_what_only_reads_and_defers_the_rest():
    """The pages' read of every agent (common.agent_values) gives the Agent rows only() gives, with their run,
    and a field it did not read loads as a deferred one does (a query)."""
    run = load("values", "multi_agent.ndjson")
    fields = (*PROFILE_FIELDS, "agent_id", "parent_id")
    read, expected = agent_values(run, fields), list(run.agents.only("run", *fields))
    assert [a.pk for a in read] == [a.pk for a in expected] and len(read) > 3
    assert [[getattr(a, f) for f in fields] for a in read] == [[getattr(a, f) for f in fields] for a in expected]
    assert all(a.run is run for a in read) and read[1].call_count == expected[1].call_count
    with CaptureQueriesContext(connection) as later:
        assert read[1].brief == run.agents.get(pk=read[1].pk).brief
    assert len(later.captured_queries) == 2  # the deferred field's, and the comparison's own


def test_a_profiles_instance_count_opens_the_roster_of_its_instances(viewer_client, run, monkeypatch):
    html = get(viewer_client, "agents", run.pk)
    table = html[html.index('id="profile-table"'):]
    links = re.findall(r'"instances"><a href="\?profile=([^"#]*)#agent-roster"[^>]*>(\d+)</a>', table)
    assert len(links) > 1 and sum(int(n) for _, n in links) == len(rows(html, "data-agent"))
    for key, count in links:
        one = get(viewer_client, "agents", run.pk, query=f"profile={key}")
        assert len(rows(one[:one.index('id="profile-table"')], "data-agent")) == int(count), key
        # the profiles still all there
        assert 'id="roster-profile"' in one and one.count('"instances"><a href="?profile=') == len(links)
    monkeypatch.setattr("runs.pages.agents.AGENTS_SHOWN", 1)
    key = next(k for k, n in links if int(n) > 1)
    paged = get(viewer_client, "agents", run.pk, query=f"profile={key}")
    assert f'href="?profile={key}&amp;agents=1"' in paged  # its pages keep the profile
    none = get(viewer_client, "agents", run.pk, query="profile=%3Cnope%3E")
    assert "No agent runs under this profile." in none and "<b>&lt;nope&gt;</b>" in none


def test_an_agents_page_links_its_first_and_last_turn_once_each(viewer_client):
    run = Run.objects.create(name="turn-links")
    ingest.append(run, [{"type": "turn_started", "agentId": "one"},
                        *({"type": "turn_started", "agentId": "three"} for _ in range(3))])
    one = viewer_client.get(reverse("runs:agent", args=(run.pk, "one"))).content.decode()
    three = viewer_client.get(reverse("runs:agent", args=(run.pk, "three"))).content.decode()
    assert one.count("/agents/one/turns/1/") == 1 and "Turn 1 (its only one)" in one and "(last)" not in one
    assert ">Turn 1</a>" in three and ">Turn 3 (last)</a>" in three


def test_the_roster_finds_agents_by_a_part_of_their_id_and_by_status(viewer_client, monkeypatch):
    """Among thousands of agents: the id's part in any case, a status, or both, in forest order; the
    roster's pages keep the search, the per-profile figures still count every agent."""
    run = Run.objects.create(name="many-to-find")
    records = [{"type": "session_started", "agentId": "root"}]
    for i in range(1, 30):
        records += [{"type": "agent_spawned", "agentId": f"Worker-{i:02d}", "parentAgentId": "root"},
                    {"type": "agent_status", "agentId": f"Worker-{i:02d}", "status": "failed" if i % 7 == 0 else "done"}]
    ingest.append(run, records)

    def roster(query):
        html = get(viewer_client, "agents", run.pk, query=query)
        return html, [a for a, _ in rows(html[:html.index('id="profile-table"')], "data-agent")]

    html, found = roster("find=WORKER-1")
    assert found == [f"Worker-{i}" for i in range(10, 20)] and "10 agents match in forest order" in html
    assert re.search(r'<tr data-profile="[^"]*"[^>]*>.*?>30</a>', html, re.S)  # the profile still counts all 30
    html, found = roster("status=failed")
    assert found == ["Worker-07", "Worker-14", "Worker-21", "Worker-28"] and '<option selected>failed</option>' in html
    _, found = roster("find=2&status=failed")
    assert found == ["Worker-21", "Worker-28"]
    monkeypatch.setattr("runs.pages.agents.AGENTS_SHOWN", 3)
    html, found = roster("find=worker-1")
    assert found == ["Worker-10", "Worker-11", "Worker-12"] and 'href="?find=worker-1&amp;agents=3"' in html
    html, found = roster("find=%3Cb%3Enope&status=done")
    assert found == [] and "No agent has an id containing “&lt;b&gt;nope” and the status done." in html
    assert "<b>nope" not in html


def test_an_agents_figures_and_surface_counts_open_its_rows(viewer_client, run):
    html = get(viewer_client, "agent", run.pk, "root")
    assert links(html, "id")["figure-turns"] == [reverse("runs:conversation", args=[run.pk, "root"])]
    calls = links(html, "id")["figure-calls"][0]
    assert calls == reverse("runs:feed", args=[run.pk]) + "?agent=root&kind=call"
    assert {(kind, agent) for _, kind, agent in feed_rows_of(viewer_client, calls)} == {("call", "root")}
    surface = links(html[html.index('id="surface"'):html.index('id="holdings"')], "data-operation")
    read = surface["files.read_file"]
    assert read == [reverse("runs:feed", args=[run.pk]) + "?agent=root&op=files.read_file"]
    assert {agent for *_, agent in feed_rows_of(viewer_client, read[0])} == {"root"}
    assert surface["files.write_file"] == []  # 0 calls: nothing to open
    refused = feed_rows_of(viewer_client, reverse("runs:feed", args=[run.pk]) + "?agent=root&op=shell.shell")
    assert refused and reverse("runs:feed", args=[run.pk]) + "?agent=root&amp;op=shell.shell" in html
    tools = links(get(viewer_client, "agent", run.pk, "AUTH-1.0r"), "data-tool")
    shown = feed_rows_of(viewer_client, tools["read_file"][0])
    assert {(kind, agent) for _, kind, agent in shown} == {("tool", "AUTH-1.0r")} and len(shown) == 2 * 2


def test_a_profiles_turns_tokens_cost_and_peak_open_where_they_are_shown(viewer_client, run):
    html = get(viewer_client, "agents", run.pk)
    table = html[html.index('id="profile-table"'):]
    profiles = [key for key, _ in rows(table, "data-profile")]
    opened = 0
    for key in profiles:
        row = table[table.index(f'data-profile="{key}"'):]
        row = row[:row.index("</tr>")]
        cells = links(row, "data-figure")
        if not cells.get("turns"):
            continue
        roster = get(viewer_client, "agents", run.pk, query=cells["turns"][0].split("?")[1].split("#")[0])
        shown = roster[:roster.index('id="profile-table"')]
        turns = sum(int(n) for n in re.findall(r'title="its turns in the feed">([\d,]+)</a>', shown))
        assert f'>{turns}</a></td>' in row.replace(",", ""), key  # the profile's turns are its instances'
        if cells["tokens"]:
            assert cells["tokens"] == [reverse("runs:detail", args=[run.pk]) + "#usage"]
            assert 'id="usage"' in get(viewer_client, "detail", run.pk)
            opened += 1
        if cells.get("peak"):
            agent = cells["peak"][0].split("/agents/")[1].rsplit("/#context")[0]
            page = viewer_client.get(cells["peak"][0])
            assert page.status_code == 200 and 'id="context"' in page.content.decode(), agent
            opened += 1
    assert opened > 1
