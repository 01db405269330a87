"""The Stores tab (runs/pages/stores.py): one row per store, its holders, lifetime and contents."""

import pytest

from runs.ingest import writer as ingest
from runs.models import Run, RunFacts
from tests.paths import STREAMS
from tests.pages_helpers import get, load, reads_of, rows

pytestmark = pytest.mark.django_db


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


def overview_stream():
    def roster(agent, mems, tasks="tasks-0", **env):
        return {"agentId": agent, **env, "type": "agent_modules", "modules": [
            {"kind": "history", "moduleId": f"history-{agent}", "enabled": True, "origin": "created", "writable": True},
            {"kind": "memories", "moduleId": mems, "enabled": True, "origin": "created", "writable": True},
            {"kind": "tasks", "moduleId": tasks, "enabled": True, "origin": "run", "writable": True}]}

    def breakdown(agent, memory, total):
        return {"agentId": agent, "type": "context_breakdown", "totalTokens": total,
                "bySource": [{"source": "memory", "tokens": memory}, {"source": "task_list", "tokens": 5}]}
    return [
        roster("root", "memories-0"), breakdown("root", 120, 1000),
        roster("w1", "memories-0", parentAgentId="root"), breakdown("w1", 80, 500),  # a live co-holder
        roster("w2", "memories-1", parentAgentId="root"), breakdown("w2", 40, 300),
        {"agentId": "w2", "type": "agent_returned", "summary": "done"},  # no longer live
        {"agentId": "w3", "type": "agent_spawned", "profileId": "w", "depth": 1}, roster("w3", "memories-2"),
        {"type": "turn_started"},
        {"type": "memory_revision", "name": "plan", "revision": 1, "change": "written", "body": "b", "len": 1, "lines": 1},
        {"type": "memory_state", "moduleId": "memories-0", "memories": [{"name": "plan", "len": 1, "lines": 1}],
         "count": 1, "totalLen": 1, "totalLines": 1},
        {"type": "memory_state", "moduleId": "memories-1", "memories": [], "count": 0, "totalLen": 0, "totalLines": 0},
        {"type": "tasks_state", "moduleId": "tasks-0", "tasks": [{"id": "t1", "title": "x", "status": "pending"}]},
    ]


def test_each_kind_leads_with_an_overview_whose_figures_list_what_they_count(viewer_client):
    run = Run.objects.create(name="store-overview")
    ingest.append(run, overview_stream())
    html = get(viewer_client, "stores", run.pk)

    def figures(kind):
        part = html[html.index(f'data-overview="{kind}"'):]
        part = part[:part.index("</dl>")]
        return {f: text for f, text in rows(part, "data-figure")}
    # memories: three stores, four holders, three of them live (w2 returned), memories-0 held by two
    # live agents; its cost is root's 120 + w1's 80 + w3's nothing reported; memories-1 and -2 never written
    assert figures("memories") == {"stores": "3", "holders": "4", "live": "3", "shared": "1", "cost": "200 tokens",
                                   "unwritten": "2"}
    assert figures("tasks") == {"stores": "1", "holders": "4", "live": "3", "shared": "1", "cost": "10 tokens",
                                "unwritten": "0"}
    history = html[html.index('data-overview="history"'):]
    assert 'data-figure="unwritten"' not in history[:history.index("</dl>")]  # nothing writes history

    def listed(query):
        page = viewer_client.get(f"/runs/{run.pk}/stores/?{query}").content.decode()
        return [s for s, _ in rows(page, "data-store")]
    assert listed("kind=memories&show=shared") == ["memories-0"]
    assert listed("kind=memories&show=unwritten") == ["memories-1", "memories-2"]
    assert listed("kind=memories&show=live") == ["memories-0", "memories-2"]
    assert listed("kind=memories&show=costed") == ["memories-0"]
    assert listed("kind=memories&show=nonsense") == ["memories-0", "memories-1", "memories-2"]
    assert 'href="?kind=memories&amp;show=shared#kind-memories"' in html


@pytest.mark.parametrize("behind", [False, True])
def test_the_stores_read_the_same_few_queries_whatever_the_holders(viewer_client, behind):
    """Of each holder only what the index reads (a whole agent row was most of its time on a run of
    thousands), and a field read beyond them would cost a query an agent; with the run's facts behind,
    the tab badge counts the divergences off the same rows."""
    counts = []
    for n in (3, 40):
        run = Run.objects.create(name=f"holders-{n}")
        records = [{"type": "session_started", "agentId": "root"}]
        for i in range(n):  # each holds a store of its own and reports what it costs its window
            records += [{"type": "agent_spawned", "agentId": f"a{i}", "profileId": "lead", "depth": 0},
                        {"type": "agent_modules", "agentId": f"a{i}", "modules": [
                            {"kind": "memories", "moduleId": f"memories-{i}", "enabled": True, "origin": "created",
                             "writable": True}]},
                        {"type": "context_breakdown", "agentId": f"a{i}", "totalTokens": 900,
                         "bySource": [{"source": "memory", "tokens": 40}]}]
        ingest.append(run, records)
        if behind:
            RunFacts.objects.filter(run=run).update(seq=0)
        html, queries = reads_of(viewer_client, "stores", run)
        counts.append(queries)
        assert len(rows(html, "data-store")) == n and "writable — — 40 Lifetime" in dict(rows(html, "data-store"))["memories-0"]
    assert counts[0] == counts[1]


def test_the_tab_badge_is_the_folded_count_when_the_facts_are_current(viewer_client):
    """The Stores tab reads every holder, yet its badge is the count the write path folded with the run's
    last record (one row), not the divergences counted again off those rows; with the facts behind, it is."""
    run = Run.objects.create(name="badge")
    ingest.append(run, [{"type": "session_started", "agentId": "root"},
                        {"type": "agent_spawned", "agentId": "a0", "profileId": "lead", "depth": 1},
                        {"type": "agent_modules", "agentId": "a0", "modules": [
                            {"kind": "memories", "moduleId": "memories-0", "enabled": True, "origin": "created",
                             "writable": True, "scope": "inherited"}]}])
    assert RunFacts.objects.get(run=run).divergences == 1
    RunFacts.objects.filter(run=run).update(divergences=7)  # marks which count the badge shows
    assert 'id="divergence-badge" title="7 divergences' in get(viewer_client, "stores", run.pk)
    RunFacts.objects.filter(run=run).update(seq=0)
    assert 'id="divergence-badge" title="1 divergence:' in get(viewer_client, "stores", run.pk)
