"""The run pages on the authored multi-agent fixtures: the numbers and rows each page shows."""

import pytest
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from tests.paths import GG_FIXTURES, STREAMS
from tests.pages_helpers import load, rows

pytestmark = pytest.mark.django_db


def get(client, name, *args):
    response = client.get(reverse(f"runs:{name}", args=args))
    assert response.status_code == 200, response.content[:500]
    return response.content.decode()


# -- Overview -------------------------------------------------------------------------------------

def test_overview_shows_the_capability_set_and_limits(viewer_client, run):
    html = get(viewer_client, "detail", run.pk)
    assert "<code>maxTurns</code> 40" in html[html.index('id="limits"'):]
    capability_set = html[html.index('id="capability-set"'):]
    assert "4 profiles" in capability_set[:300]
    assert "&quot;scope&quot;: &quot;inherited&quot;" in capability_set  # the declared values, as JSON text


def test_overview_clocks_runtime_waiting_and_agents_by_status(viewer_client):
    multi = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "detail", multi.pk)
    clocks = html[html.index('id="clocks"'):html.index("</section>", html.index('id="clocks"'))]
    assert 'id="clock-runtime">33s<' in clocks and 'id="clock-waiting">16s<' in clocks  # root blocked 16.577 s
    assert [r for r in rows(clocks, "class") if r[0].startswith("status ")] == [
        ("status status-done", "done"), ("status status-failed", "failed")]
    assert "</span> 6</li>" in clocks and "</span> 1</li>" in clocks
    # a live run: the declared runtime ceiling beside the runtime, and who is blocked right now
    live = Run.objects.create(name="live")
    ingest.append(live, [
        {"type": "session_started", "timestamp": "2026-01-01T00:00:00Z",
         "capabilitySet": {"agents": [{"slug": "lead"}], "limits": {"maxRuntimeSecs": 600}}},
        {"type": "agent_spawned", "agentId": "root", "profileId": "lead", "timestamp": "2026-01-01T00:00:01Z"},
        {"type": "agent_status", "agentId": "root", "status": "blocked", "timestamp": "2026-01-01T00:00:02Z"},
    ])
    html = get(viewer_client, "detail", live.pk)
    clocks = html[html.index('id="clocks"'):html.index("</section>", html.index('id="clocks"'))]
    assert "of 10m 00s allowed" in clocks and "1 blocked now" in clocks


def test_overview_error_turns_by_kind_with_types_beneath(viewer_client, run):
    html = get(viewer_client, "detail", run.pk)
    assert rows(html, "data-error-kind") == [("program_fault", "program_fault 1× program_unknown_name 1×")]
    multi = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "detail", multi.pk)
    assert rows(html, "data-error-kind") == [("program_fault", "program_fault 2× program_throw 2×"),
                                             ("model_api", "model_api 1× model_length_capped 1×"),
                                             ("transpile", "transpile 1× transpile_syntax 1×")]


# -- Agents ----------------------------------------------------------------------------------------

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
                                    "standard", "done", "2", "9", "1", "4", "0.0s"]
    assert text["AUTH-1.0r"].split() == ["AUTH-1.0r", "reviewer", "vendor/small", "tool_calling", "—", "—",
                                         "review", "done", "1", "4", "0", "1", "0.0s"]


def test_suspended_time_on_the_roster_and_the_agent_page(viewer_client):
    multi = load("multi", "multi_agent.ndjson")
    roster = dict(rows(get(viewer_client, "agents", multi.pk), "data-agent"))
    # root was blocked on its subagents from 10:00:06.850 to 10:00:23.427
    assert roster["root"].split()[-1] == "16s" and roster["agent-0"].split()[-1] == "0.0s"
    html = get(viewer_client, "agent", multi.pk, "root")
    assert dict(rows(html, "id"))["suspended"] == "16s suspended (blocked)"


# -- One agent -------------------------------------------------------------------------------------

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
    assert ">1×</td><td><code>board.create_issue</code>" in unoffered
    assert ">2×</td><td><code>shell.shell</code>" in unoffered


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
    assert "unavailable</code> <b>3×" in api and "not-found</code> <b>1×" in api
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
    assert ">1×</td><td><code>write_file</code>" in html[html.index('id="unjoined-calls"'):]


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


# -- Stores ----------------------------------------------------------------------------------------

def test_stores_one_row_per_store_with_holders_lifetime_and_contents(viewer_client, run):
    html = get(viewer_client, "stores", run.pk)
    stores = [s for s, _ in rows(html, "data-store")]
    assert stores == ["history-0", "history-1", "history-2", "history-3", "history-4", "memories-0", "memories-1",
                      "memories-2", "memories-3", "tasks-0", "tasks-1", "board-0", "skills-0", "archive-0"]
    text = dict(rows(html, "data-store"))
    assert "2 holders" in text["memories-0"] and "3 holders" in text["board-0"]
    assert "root forked" not in text["memories-0"]
    holders = [h for h, _ in rows(html[html.index('id="store-board-0"'):], "data-holder")][:3]
    assert holders == ["root", "root.f1", "AUTH-1.0r"]
    # lifetime: created, then the successions
    m2 = html[html.index('id="store-memories-2"'):html.index('id="store-memories-3"')]
    assert [e for e, _ in rows(m2, "data-event")] == ["created", "swapped"]
    assert "memories-3" in dict(rows(m2, "data-event"))["swapped"]
    h3 = html[html.index('id="store-history-3"'):html.index('id="store-history-4"')]
    assert [e for e, _ in rows(h3, "data-event")] == ["created", "carried", "carried"]
    # contents once, under the store
    assert "What to write next" in m2 and html.count("What to write next") == 1
    assert "Port the parser" in text["tasks-1"]
    assert "csv-tools unread" in text["skills-0"]
    assert "Login form &lt;em&gt;" in html  # board issue title, escaped
    assert "&lt;b&gt;bold&lt;/b&gt;" in html  # archive preview, escaped


def test_store_cost_per_holder_is_its_band_in_the_holders_latest_context(viewer_client, run):
    html = get(viewer_client, "stores", run.pk)

    def costs(store):
        section = html[html.index(f'id="store-{store}"'):]
        section = section[:section.index("</table>")]
        return {agent: text.split()[-1] for agent, text in rows(section, "data-holder")}

    assert costs("memories-0") == {"root": "40", "root.f1": "0"}  # root's latest memory band; the fork's is empty
    assert costs("history-3") == {"writer-a": "890", "writer-b": "810", "writer-c": "700"}  # history: the whole window
    assert costs("board-0") == {"root": "—", "root.f1": "—", "AUTH-1.0r": "—"}  # no band carries the board
    # the only stores released: those swapped away under a successor, held by nobody any more
    dropped = [chunk.split('"', 1)[0] for chunk in html.split('id="store-')[1:] if 'data-lifetime="dropped"' in chunk.split("</h3>", 1)[0]]
    assert dropped == ["memories-2"] and 'data-lifetime="held"' not in html


def test_a_store_is_dropped_only_when_every_holder_released_it(viewer_client):
    multi = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "stores", multi.pk)
    # agent-1's exec dropped tasks-1, its only holder (the fork got a copy, tasks-2)
    assert [(s, t) for s, t in rows(html, "data-lifetime")] == [("dropped", "dropped")]
    assert 'data-lifetime="dropped"' in html[html.index('id="store-tasks-1"'):html.index('id="store-tasks-2"')]
    # the same drop while the fork still links the store: released by one holder, held by the other
    lines = (STREAMS / "multi_agent.ndjson").read_text().replace(
        '{"kind":"tasks","disposition":"copied","fromModuleId":"tasks-1","toModuleId":"tasks-2"}',
        '{"kind":"tasks","disposition":"linked","fromModuleId":"tasks-1","toModuleId":"tasks-1"}').replace(
        '"moduleId":"tasks-2","enabled":true,"origin":"forked"', '"moduleId":"tasks-1","enabled":true,"origin":"forked"')
    linked = Run.objects.create(name="linked")
    ingest.append_lines(linked, lines.encode().splitlines())
    html = get(viewer_client, "stores", linked.pk)
    assert rows(html, "data-lifetime") == [("held", "held · released by 1 of 2")]


# -- Divergences -----------------------------------------------------------------------------------

def test_divergences_page_and_badge(viewer_client, run):
    html = get(viewer_client, "divergences", run.pk)
    found = rows(html, "data-divergence")
    assert sorted(k for k, _ in found) == ["carried_swapped", "inherited_fell_back", "isolated_reached_several",
                                           "shared_split"]
    text = dict(found)
    assert "scope: inherited → origin: created (memories-1)" in text["inherited_fell_back"]
    assert "carried memories-2 → holds memories-3" in text["carried_swapped"]
    assert 'id="divergence-badge"' in html and ">4</span>" in html
    assert 'id="divergence-badge"' in get(viewer_client, "agents", run.pk)  # the badge rides on every tab


def test_a_run_without_rosters_shows_no_divergence(viewer_client):
    legacy = load("legacy", "legacy.ndjson")
    mock = Run.objects.create(name="mock")
    ingest.append_lines(mock, (GG_FIXTURES / "real-mock-session.ndjson").read_bytes().splitlines())
    html = get(viewer_client, "divergences", mock.pk)
    assert 'id="no-rosters"' in html and 'id="divergence-badge"' not in html
    assert 'data-divergence=' not in get(viewer_client, "divergences", legacy.pk)


# -- Refusals --------------------------------------------------------------------------------------

def test_refusal_roster_per_agent_per_turn_with_cap_counts(viewer_client, run):
    html = get(viewer_client, "refusals", run.pk)
    assert [a for a, _ in rows(html, "data-agent")] == ["root"]
    entries = rows(html, "data-turn")
    assert entries == [  # grouped by the call refused, the most refused first, then gg's cap counts
        ("2", "2 gg.shell.shell unavailable gg.shell.shell is not available to this agent"),
        ("2", "2 gg.shell.shell unavailable gg.shell.shell is not available to this agent"),
        ("1", "1 gg.board.create_issue unavailable gg.board.create_issue is not available to this agent"),
        ("2", "2 3 further refused calls not recorded (gg's cap)"),
    ]
    groups = [(op, text.split(" Turn ")[0]) for op, text in rows(html, "data-operation")
              if text.startswith("gg.") and " Turn " in text]
    assert groups == [
        ("shell.shell", "gg.shell.shell 2× turn 2 · unavailable gg.shell.shell is not available to this agent"),
        ("board.create_issue", "gg.board.create_issue 1× turn 1 · unavailable "
                               "gg.board.create_issue is not available to this agent"),
    ]
    assert html.count('<details class="refusal-group"') == 2  # collapsed: no `open`
    assert 'data-filter=".refusal-group"' in html  # searchable
    start = html.index('id="refusal-totals"')
    totals = dict(rows(html[start:html.index("</table>", start)], "data-operation"))
    assert totals == {"shell.shell": "shell.shell 2", "board.create_issue": "board.create_issue 1"}
    assert '<b id="refused-total">3</b>' in html and '<b id="suppressed-total">3</b>' in html


def test_refusals_on_the_foundation_fixture(viewer_client):
    run = load("multi", "multi_agent.ndjson")
    html = get(viewer_client, "refusals", run.pk)
    agent0 = html[html.index('data-agent="agent-0"'):]
    assert [t for t, _ in rows(agent0, "data-turn")] == ["3", "3", "3"]  # two refused, then the cap row
    assert "gg.session.approve" in agent0 and "Use `gg.session.finish` instead." in agent0
    assert "1 further refused call not recorded" in agent0


# -- Arms ------------------------------------------------------------------------------------------

def test_arms_side_by_side(viewer_client, run):
    html = get(viewer_client, "arms", run.pk)
    arms = [a for a, _ in rows(html, "data-arm")]
    assert arms == ["java|none", "python|return+errors", "rust|return+parameters+errors", "typescript|return+errors", "|"]
    figures = dict(rows(html, "data-row"))
    assert figures["turns"] == "Turns 3 2 1 1 1"
    assert figures["error_turns"] == "Error turns 0 1 0 0 0"
    assert figures["calls"] == "Calls 3 9 1 4 4"
    assert figures["docs_view"] == "docs_view tokens 0 1.1k 900 200 0"
    assert figures["search_results"] == "search_results tokens 0 150 300 80 0"
    ops = dict(rows(html, "data-operation"))
    assert ops["files.read_file"] == "files.read_file 0 2 1 2 0"
    assert ops["read_file"] == "read_file 0 0 0 0 2"


# -- Live ------------------------------------------------------------------------------------------

def test_pages_poll_while_the_run_is_live_and_stop_when_it_ends(viewer_client):
    live = Run.objects.create(name="live")
    lines = (STREAMS / "pages_run.ndjson").read_bytes().splitlines()
    ingest.append_lines(live, lines[:-1])  # everything but session_ended
    for name in ("detail", "agents", "stores", "divergences", "refusals", "arms"):
        assert 'hx-trigger="every 3s"' in get(viewer_client, name, live.pk)
    ingest.append_lines(live, lines[-1:])
    for name in ("detail", "agents", "stores", "divergences", "refusals", "arms"):
        assert "hx-trigger" not in get(viewer_client, name, live.pk)


def test_pages_need_a_login(client, run):
    response = client.get(reverse("runs:agents", args=[run.pk]))
    assert response.status_code == 302 and "/login/" in response["Location"]
