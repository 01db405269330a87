"""One store's page (runs/pages/store.py): a memory store's revision history in order, attributed
through its author's latest memory store, and its peak usage; on a stream authored here."""

import pytest
from django.urls import reverse

from runs.ingest.rebuild import rebuild_projections
from runs.ingest.writer import append
from runs.models import MemoryRevision, Run
from runs.pages import store as store_page
from runs.pages.store import ROWS_SHOWN
from runs.pages.stores import CARD_ROWS
from tests.pages_helpers import rows
from tests.streams import projection_dump

pytestmark = pytest.mark.django_db


def memories(agent, mid, entries, peak=None, **extra):
    rec = {"agentId": agent, "type": "memory_state", "moduleId": mid, "strategy": "markdown",
           "memories": [{"name": n, "description": "", "len": ln, "lines": li} for n, ln, li in entries],
           "count": len(entries), "totalLen": sum(e[1] for e in entries), "totalLines": sum(e[2] for e in entries),
           "scope": "isolated", "writable": True, **extra}
    if peak:
        rec["peak"] = peak
    return rec


def revision(agent, name, n, change, body, lines, description=""):
    return {"agentId": agent, "type": "memory_revision", "name": name, "revision": n, "change": change,
            "description": description, "body": body, "len": len(body), "lines": lines}


def roster(agent, mid):
    return {"agentId": agent, "type": "agent_modules", "modules": [
        {"kind": "memories", "moduleId": mid, "enabled": True, "origin": "created", "writable": True, "scope": "isolated"}]}


STREAM = [
    {"type": "agent_spawned", "profileId": "lead", "modelId": "m", "depth": 0},
    roster("root", "memories-0"),
    memories("root", "memories-0", []),
    {"type": "turn_started"},
    revision("root", "plan", 1, "written", "Read the <spec> first.", 1, "What to do"),
    memories("root", "memories-0", [("plan", 22, 1)]),
    {"type": "turn_started"},
    revision("root", "plan", 2, "updated", "Read the spec, then " + "x" * 400, 3),
    memories("root", "memories-0", [("plan", 420, 3)]),
    revision("root", "notes", 1, "written", "n", 1),
    memories("root", "memories-0", [("plan", 420, 3), ("notes", 1, 1)]),
    # a subagent with its own store, its revision before any memory_state: its roster names the store
    {"agentId": "w1", "parentAgentId": "root", "type": "agent_spawned", "profileId": "w", "depth": 1},
    roster("w1", "memories-1"),
    {"agentId": "w1", "type": "turn_started"},
    revision("w1", "scratch", 1, "written", "tmp", 1),
    {"type": "turn_started"},
    revision("root", "plan", 3, "deleted", "", 0),
    # gg's own peak says more than any snapshot did (a state the stream did not carry)
    memories("root", "memories-0", [("notes", 1, 1)], peak={"count": 3, "totalLen": 500, "totalLines": 4}),
]


def stored():
    run = Run.objects.create(name="memory-history")
    for i in range(0, len(STREAM), 5):  # chunk boundaries must not matter
        append(run, STREAM[i:i + 5])
    incremental = projection_dump(run)
    rebuild_projections(run)
    assert projection_dump(run) == incremental
    return run


def test_revisions_are_attributed_to_the_authors_latest_memory_store_with_their_turn():
    run = stored()
    got = [(r.module_id, r.agent_id, r.turn, r.name, r.revision, r.change, r.length, r.lines)
           for r in MemoryRevision.objects.filter(run=run).order_by("seq")]
    assert got == [
        ("memories-0", "root", 1, "plan", 1, "written", 22, 1),
        ("memories-0", "root", 2, "plan", 2, "updated", 420, 3),
        ("memories-0", "root", 2, "notes", 1, "written", 1, 1),
        ("memories-1", "w1", 1, "scratch", 1, "written", 3, 1),
        ("memories-0", "root", 3, "plan", 3, "deleted", 0, 0),
    ]
    assert MemoryRevision.objects.get(run=run, name="plan", revision=2).body_head == ("Read the spec, then " + "x" * 400)[:300]
    store = run.stores.get(module_id="memories-0")
    assert store.peak == {"count": 3, "totalLen": 500, "totalLines": 4}  # gg's peak beat every snapshot
    assert run.stores.get(module_id="memories-1").peak is None  # no memory_state named it


def test_the_store_page_lists_its_revisions_in_order_and_its_peak(viewer_client):
    run = stored()
    html = viewer_client.get(reverse("runs:store", args=[run.pk, "memories-0"])).content.decode()
    assert [c for c, _ in rows(html, "data-change")] == ["written", "updated", "written", "deleted"]
    revisions = html[html.index('id="revisions"'):]
    assert revisions.index(">plan<") < revisions.index(">notes<")
    assert "Read the &lt;spec&gt; first." in html  # the body, escaped
    assert f'href="{reverse("runs:turn", args=[run.pk, "root", 2])}"' in html
    peak = html[html.index('id="memory-peak"'):]
    assert "<dd>3</dd>" in peak and "<dd>500</dd>" in peak and "<dd>4</dd>" in peak
    assert viewer_client.get(reverse("runs:store", args=[run.pk, "memories-9"])).status_code == 404
    # the Stores tab names the peak and counts the revisions, linking here
    stores = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    card = stores[stores.index('data-peak="memories-0"'):]
    assert "3 memories · 500 chars · 4 lines" in card and "4 revisions" in card[:600]
    assert reverse("runs:store", args=[run.pk, "memories-0"]) in card[:600]


def test_a_long_history_is_read_a_page_at_a_time(viewer_client, monkeypatch):
    monkeypatch.setattr(store_page, "REVISIONS_SHOWN", 2)
    run = stored()
    url = reverse("runs:store", args=[run.pk, "memories-0"])
    first = viewer_client.get(url).content.decode()
    assert [c for c, _ in rows(first, "data-change")] == ["written", "updated"] and "Page 1 of 2" in first
    last = viewer_client.get(url + "?page=9").content.decode()  # past the last: the last
    assert [c for c, _ in rows(last, "data-change")] == ["written", "deleted"] and "Page 2 of 2" in last


def crowded_store(holders: int, steps: int) -> list[dict]:
    """`holders` workers holding the run's board-0, and a chain of `steps` exec successions carrying
    root's memories-0 (a lifetime step each)."""
    board = {"kind": "board", "moduleId": "board-0", "enabled": True, "writable": True, "scope": "run"}
    carried = {"kind": "memories", "moduleId": "memories-0", "enabled": True, "writable": True}
    out = [{"type": "session_started", "agentId": "root"},
           {"type": "agent_spawned", "agentId": "root", "profileId": "lead", "depth": 0},
           {"type": "agent_modules", "agentId": "root", "modules": [{**board, "origin": "created"},
                                                                    {**carried, "origin": "created"}]}]
    for i in range(holders):
        out += [{"type": "agent_spawned", "agentId": f"w{i:03d}", "parentAgentId": "root", "profileId": "worker", "depth": 1},
                {"type": "agent_modules", "agentId": f"w{i:03d}", "modules": [{**board, "origin": "inherited"}]}]
    for i in range(1, steps + 1):
        out += [{"type": "agent_transition", "agentId": f"e{i - 1}" if i > 1 else "root", "kind": "exec",
                 "toAgentId": f"e{i}", "modules": [{"kind": "memories", "disposition": "carried",
                                                   "fromModuleId": "memories-0", "toModuleId": "memories-0"}]},
                {"type": "agent_spawned", "agentId": f"e{i}", "profileId": "lead", "depth": 0},
                {"type": "agent_modules", "agentId": f"e{i}", "modules": [{**carried, "origin": "transferred"}]}]
    return out


def test_a_stores_card_lists_its_first_holders_and_steps_and_links_the_rest(viewer_client):
    run = Run.objects.create(name="crowded")
    append(run, crowded_store(45, 30))
    html = viewer_client.get(reverse("runs:stores", args=[run.pk])).content.decode()
    board = html[html.index('id="store-board-0"'):]
    assert [h for h, _ in rows(board, "data-holder")] == ["root", *(f"w{i:03d}" for i in range(CARD_ROWS - 1))]
    assert f'<a class="holders-more" href="/runs/{run.pk}/stores/board-0/#holders">and 26 more holders</a>' in board
    assert "46 holders" in board  # the figures count them all
    memory = html[html.index('id="store-memories-0"'):html.index('id="store-board-0"')]
    assert len(rows(memory, "data-event")) == CARD_ROWS
    assert f'<a href="/runs/{run.pk}/stores/memories-0/#lifetime">and 11 more steps</a>' in memory


@pytest.mark.parametrize("holders", [30, 450])
def test_the_store_page_lists_its_holders_and_lifetime_a_page_at_a_time(viewer_client, django_assert_max_num_queries,
                                                                        holders):
    run = Run.objects.create(name="crowded")
    append(run, crowded_store(holders, 250))
    url = reverse("runs:store", args=[run.pk, "board-0"])
    with django_assert_max_num_queries(15):  # whatever the number of holders and steps
        html = viewer_client.get(url).content.decode()
    shown = [h for h, _ in rows(html, "data-holder")]
    assert shown == ["root", *(f"w{i:03d}" for i in range(min(holders, ROWS_SHOWN - 1)))]
    if holders > ROWS_SHOWN:
        assert f"Holders 1–200 of {holders + 1}" in html and 'href="?holders=200#holders">after' in html
        last = viewer_client.get(url + "?holders=400").content.decode()
        assert [h for h, _ in rows(last, "data-holder")] == [f"w{i:03d}" for i in range(399, holders)]
    memory = viewer_client.get(reverse("runs:store", args=[run.pk, "memories-0"]) + "?lifetime=200").content.decode()
    steps = rows(memory, "data-event")
    assert len(steps) == 51 and "the exec e249 → e250" in steps[-1][1] and "Steps 201–251 of 251" in memory
    assert 'href="?lifetime=0#lifetime">← before' in memory
