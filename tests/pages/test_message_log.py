"""The message log and what material cost (issue 20): each turn's window as gg assembled it, billed
by residency, on the turn and agent pages; the context graph's compaction markers and fullness meter.
Authored streams, folded by the one write path (and rebuilt to the same rows), and the real recorded
fixture."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.ingest import rebuild
from runs.ingest import writer as ingest
from runs.models import Agent, PooledMessage, Run
from tests.pages_helpers import rows
from tests.streams import REAL_MOCK, import_stream, projection_dump, settled_pool

pytestmark = pytest.mark.django_db

PRICES = {"acme/model": {"input": 1.0, "cached": 0.5, "output": 2.0, "reasoning": 2.0}}


def msg(mid, role, tokens, **extra):
    return {"type": "context_message", "id": mid, "role": role, "content": f"body of {mid} <b>", "tokens": tokens,
            "toolCalls": [], "images": [], **extra}


def prompt(pointers, tokens, cost=None, response=None):
    return {"type": "prompt", "request": [{"id": i, "source": s} for i, s in pointers], "finishReason": "stop",
            "totalTokens": 0, "tokens": tokens, **({"cost": cost} if cost else {}),
            **({"responseId": response} if response else {})}


def breakdown(total):
    return {"type": "context_breakdown", "bySource": [{"source": "system", "tokens": 100},
                                                      {"source": "history", "tokens": total - 100}],
            "totalTokens": total, "windowLimit": 1000}


def stream():
    """Four turns of one agent: a system prompt resident throughout, a user message that leaves at a
    compaction (turn 3) and comes back (turn 4), a reply and a file view that the compaction drops."""
    return [
        {"type": "agent_spawned", "profileId": "worker", "modelId": "acme/model"},
        {"type": "turn_started"}, breakdown(150),
        msg("sys", "system", 100), msg("u1", "user", 50), msg("a1", "assistant", 30),
        prompt([("sys", "system"), ("u1", "user_prompt")], {"uncachedInput": 150, "cachedInput": None, "output": 10},
               response="a1"),
        {"type": "turn_started"}, breakdown(200),
        msg("t1", "tool", 20, label="src/app.py"),
        prompt([("sys", "system"), ("u1", "user_prompt"), ("a1", "assistant"), ("t1", "file_view")],
               {"uncachedInput": 100, "cachedInput": 100, "output": 5}, cost={"comparable": 0.001}),
        {"type": "turn_started"},
        {"type": "compaction", "strategy": "self-summarization", "beforeTokens": 200, "afterTokens": 120,
         "summaryTokens": 20, "retained": {"skills": 0, "tasks": 1, "memories": 2}},
        breakdown(120), msg("s1", "user", 20),
        prompt([("sys", "system"), ("s1", "history")], {"uncachedInput": 120, "output": 0}, cost={"comparable": 0.002}),
        {"type": "turn_started"},
        {"type": "compaction", "strategy": "self-summarization", "beforeTokens": 170, "afterTokens": 170},
        breakdown(170),
        prompt([("sys", "system"), ("s1", "history"), ("u1", "user_prompt")], {"uncachedInput": 170, "output": 3}),
    ]


@pytest.fixture
def priced(settings):
    settings.GG_MODEL_PRICES = PRICES


def folded(records, name="messages", chunk_lines=3):
    """`records` stored in small chunks; the rebuild from the log projects the same rows."""
    run = Run.objects.create(name=name)
    ingest.append(run, records, chunk_lines=chunk_lines)
    incremental = projection_dump(run)
    rebuild.rebuild_projections(run)
    assert projection_dump(run) == incremental
    run.refresh_from_db()
    return run


def pool(run):
    return {mid: m for (_, mid), m in settled_pool(run).items()}


def test_each_item_is_billed_its_share_of_every_turn_it_stays_resident(priced):
    run = folded(stream())
    p = pool(run)
    assert p["sys"].spans == [[1, 4]] and p["u1"].spans == [[1, 2], [4, 4]] and p["a1"].spans == [[2, 2]]
    # turn 1: 150 reported over 100 + 50; turn 2: 200 over 100/50/30/20; turn 3: 120 over 100/20;
    # turn 4: 170 over 100/20/50 — the system prompt pays all four turns, the user message three
    assert p["sys"].billed == pytest.approx(400) and p["u1"].billed == pytest.approx(150)
    assert p["a1"].billed == pytest.approx(30) and p["t1"].billed == pytest.approx(20)
    assert (p["t1"].label, p["t1"].band, p["s1"].band) == ("src/app.py", "file_view", "history")
    material = Agent.objects.get(run=run, agent_id="root").material
    assert material["turns"] == 4 and material["items"] == 5 and material["billed"] == pytest.approx(640)
    assert material["bands"]["system"] == pytest.approx(400) and material["estimated"] is True
    # turn 1 priced (150 input tokens at $1/M); turn 2 the stream's $0.001 split by the model's prices
    # (150 of 160 priced µ$ are input); turn 3 generated nothing, so the stream's $0.002 is all input's
    turn_costs = [150e-6, 0.001 * 150 / 160, 0.002, 170e-6]
    assert material["cost"] == pytest.approx(sum(turn_costs))
    assert p["sys"].cost == pytest.approx(turn_costs[0] * 100 / 150 + turn_costs[1] / 2 + turn_costs[2] * 100 / 120
                                          + turn_costs[3] * 100 / 170)


def test_the_turn_page_lists_the_window_with_residency_and_shares(viewer_client, priced):
    run = folded(stream())
    html = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 4))).content.decode()
    window = rows(html, "data-message")
    assert [m for m, _ in window] == ["sys", "s1", "u1"]  # in the order gg assembled it
    assert 'data-message="sys" data-band="system" data-resident="4"' in html
    assert 'data-message="u1" data-band="user_prompt" data-resident="3"' in html
    sys_row = dict(window)["sys"]
    assert sys_row.startswith("1 system system") and "100 " in sys_row  # position, band, role, tokens
    assert "170 tokens" in html and "estimated" in html
    # turn 2: the file view, new this turn, with its body escaped; turn 1's items carried over
    two = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 2))).content.decode()
    assert [m for m, _ in rows(two, "data-message")] == ["sys", "u1", "a1", "t1"]
    assert "src/app.py" in two and "body of t1 &lt;b&gt;" in two and "body of t1 <b>" not in two
    assert 'data-message="a1" data-band="assistant" data-resident="1"' in two


def test_a_compaction_drops_items_and_is_marked_on_the_graph(viewer_client, priced):
    run = folded(stream())
    three = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 3))).content.decode()
    assert [m for m, _ in rows(three, "data-message")] == ["sys", "s1"]  # u1, a1 and t1 dropped
    assert 'id="turn-compaction"' in three and "reclaimed 80" in three and "retained 0 skills / 1 task / 2 memories" in three
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    markers = rows(html, "data-turn")
    assert ("3", "compaction at the top of turn 3 (self-summarization): 200 → 120 tokens, reclaimed 80 tokens −80") in markers
    assert any(t == "4" and "170 → 170 tokens" in text for t, text in markers)
    assert "reclaimed 0" not in html and "compacted" in html
    # the fullness meter: the latest breakdown's 170 of a 1,000-token window
    assert 'data-fullness="0.17"' in html and "17.0% full" in html
    # what material cost: the system prompt first, billed over its four resident turns
    top = rows(html, "data-resident")
    assert top[0][0] == "4" and top[0][1].startswith("sys system system 100 1 4 turns 400 62.5%")
    assert rows(html, "data-view") == [("src/app.py", "file_view src/app.py 20 3.1%")]


def test_views_are_billed_by_name_and_band():
    """A path and a view label that read the same are kept apart (spec/stream.md §7.6)."""
    run = folded([{"type": "turn_started"}, msg("f", "tool", 30, label="notes"), msg("t", "user", 10, label="notes"),
                  prompt([("f", "file_view"), ("t", "text_view")], {"uncachedInput": 80})], "views")
    views = Agent.objects.get(run=run).material["views"]
    assert views == {"file_view": {"notes": 60}, "text_view": {"notes": 20}}


def test_a_window_past_the_limit_and_one_with_no_limit(viewer_client):
    run = folded([{"type": "turn_started"}, {**breakdown(1500), "fullness": 1.5}], "over")
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert "150.0% full" in html and "past the window" in html
    run = folded([{"type": "turn_started"}, {**breakdown(150), "windowLimit": None}], "no-limit")
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert "the stream gave no window limit" in html and "% full" not in html


def test_unpriced_and_undefined_material_is_kept_not_guessed(viewer_client):
    run = folded([{"type": "agent_spawned", "modelId": "nobody/knows"}, {"type": "turn_started"},
                  msg("sys", "system", 10),
                  prompt([("sys", "system"), ("ghost", "history")], {"uncachedInput": 40, "output": 2})], "unpriced")
    p = pool(run)
    assert p["sys"].billed == 40 and p["sys"].cost is None and p["ghost"].tokens is None and p["ghost"].billed == 0
    html = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 1))).content.decode()
    assert "never defined on the stream" in html
    run = folded([{"type": "turn_started"}, prompt([("ghost", "history")], {"uncachedInput": 40})], "unattributed")
    assert Agent.objects.get(run=run).material["unattributed"] == 40


def test_the_real_recorded_fixture_renders(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert 'id="material"' in html and "No <code>prompt</code> windows reported" in html
    turn = viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 1)))
    assert turn.status_code == 200 and "No <code>prompt</code> recorded for this turn." in turn.content.decode()


def long_stream(turns):
    """`turns` turns whose windows grow by one message a turn, with a compaction every 50th."""
    out, window = [{"type": "agent_spawned", "modelId": "acme/model"}], []
    for n in range(1, turns + 1):
        out.append({"type": "turn_started"})
        if n % 50 == 0:
            out.append({"type": "compaction", "beforeTokens": 10 * len(window), "afterTokens": 10})
            window = window[:1]
        out += [breakdown(100 + 10 * len(window)), msg(f"m{n}", "user", 10)]
        window.append(f"m{n}")
        out.append(prompt([(m, "history") for m in window], {"uncachedInput": 10 * len(window), "output": 1}))
    return out


def test_the_pages_read_a_bounded_amount_per_turn(viewer_client, django_assert_max_num_queries, priced):
    small, large = folded(long_stream(3), "small", 500), folded(long_stream(600), "large", 500)
    assert PooledMessage.objects.filter(run=large).count() == 600
    # the agent page, and a turn of a 3-item window against one of 51 items 599 turns in
    for name, few, many in (("agent", ("root",), ("root",)), ("turn", ("root", 3), ("root", 599))):
        with CaptureQueriesContext(connection) as captured:
            assert viewer_client.get(reverse(f"runs:{name}", args=(small.pk, *few))).status_code == 200
        with django_assert_max_num_queries(len(captured), info=name):
            html = viewer_client.get(reverse(f"runs:{name}", args=(large.pk, *many))).content.decode()
        assert html.count("data-resident=") == (51 if name == "turn" else 15)


def test_tool_results_are_billed_to_the_tool_that_brought_them_in(viewer_client):
    """Per tool (spec/stream.md §7.6): a tool message's residency bill goes to the call it answers,
    named by the assistant message that asked for it; an answer to no known call is billed to no tool;
    with no `label`, a read_file result is billed to the view of the path its call read."""
    ask = msg("a1", "assistant", 10, toolCalls=[{"id": "c1", "name": "read_file", "args": {"path": "src/app.py"}},
                                                 {"id": "c2", "name": "search", "args": {}}])
    run = folded([{"type": "turn_started"}, msg("sys", "system", 50), ask,
                  prompt([("sys", "system")], {"uncachedInput": 50}, response="a1"),
                  {"type": "turn_started"}, msg("r1", "tool", 30, toolCallId="c1"), msg("r2", "tool", 10, toolCallId="c2"),
                  msg("r3", "tool", 10, toolCallId="nobody-asked"),
                  prompt([("sys", "system"), ("a1", "assistant"), ("r1", "tool_output"), ("r2", "tool_output"),
                          ("r3", "tool_output")], {"uncachedInput": 110}),
                  {"type": "turn_started"},
                  prompt([("sys", "system"), ("r1", "tool_output")], {"uncachedInput": 80})], "tools", chunk_lines=2)
    p = pool(run)
    assert (p["r1"].tool, p["r2"].tool, p["r3"].tool, p["a1"].tool) == ("read_file", "search", "", "")
    # a stream predating `label`: the read_file result is the view of the path its call asked for
    assert (p["r1"].label, p["r2"].label) == ("src/app.py", "")
    assert Agent.objects.get(run=run).material["views"] == {"tool_output": {"src/app.py": pytest.approx(60)}}
    material = Agent.objects.get(run=run).material
    assert material["tools"] == {"read_file": pytest.approx(60), "search": pytest.approx(10)}  # r1 resident two turns
    assert material["calls"] == {}  # both calls answered: nothing left pending
    html = viewer_client.get(reverse("runs:agent", args=(run.pk, "root"))).content.decode()
    assert rows(html, "data-tool") == [("read_file", "read_file 60 25.0%"), ("search", "search 10 4.2%")]
    window = dict(rows(viewer_client.get(reverse("runs:turn", args=(run.pk, "root", 2))).content.decode(), "data-message"))
    assert "tool read_file" in window["r1"] and "tool search" in window["r2"] and window["r3"].startswith("5 tool_output tool r3 ")
