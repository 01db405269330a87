"""The Refusals tab (runs/pages/refusals.py): the roster per agent per turn, with the caps' counts."""

import pytest
from django.urls import reverse

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages.refusals import REFUSING_SHOWN
from tests.pages_helpers import get, load, refusal_roster, refusing_agents, rows

pytestmark = pytest.mark.django_db

QUERIES = 11  # the page's reads, the same for any roster: the agents it lists read once, the tab badge off the facts


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
    assert 'id="refusal-search" name="q"' in html  # searchable
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


@pytest.mark.parametrize("turns,per_turn", [(20, 2), (110, 50)])  # 40 and 5,500 shell refusals
def test_the_roster_reads_the_same_few_rows_and_exact_counts_whatever_its_size(
        viewer_client, django_assert_num_queries, turns, per_turn):
    from runs.ingest import writer as ingest
    from runs.models import Run
    from runs.pages.refusals import GROUP_ROWS_SHOWN

    run = Run.objects.create(name="roster")
    ingest.append(run, refusal_roster(turns, per_turn), chunk_lines=20_000)  # one chunk: one fold
    viewer_client.get(reverse("runs:refusals", args=[run.pk]))  # the session's and the run's first reads
    with django_assert_num_queries(QUERIES):
        html = get(viewer_client, "refusals", run.pk)
    shell, board = turns * per_turn, turns
    assert f'<b id="refused-total">{shell + board:,}</b>' in html
    assert f'<b id="suppressed-total">{2 * (turns // 10):,}</b>' in html
    start = html.index('id="refusal-totals"')
    totals = dict(rows(html[start:html.index("</table>", start)], "data-operation"))
    assert totals == {"shell.shell": f"shell.shell {shell:,}", "board.create_issue": f"board.create_issue {board:,}"}
    groups = [text.split(" Turn ")[0] for op, text in rows(html, "data-operation") if " Turn " in text]
    assert groups == [
        f"gg.shell.shell {shell:,}× turns 1–{turns} · unavailable not offered (+1 other message)",
        f"gg.board.create_issue {board}× turns 1–{turns} · denied read-only"]
    entries = [t for t in rows(html, "data-turn") if "gg's cap" not in t[1]]
    assert len(entries) == 2 * GROUP_ROWS_SHOWN  # each group's first rows, the rest counted
    assert f"… and {shell - GROUP_ROWS_SHOWN:,} more of this call" in html
    assert "earliest" not in html


def test_a_groups_calls_page_on_by_seq_each_page_the_same_few_reads(viewer_client, django_assert_num_queries):
    """The "Show more" row of a group reads its next calls after the last one shown (keyset): paging
    on from the page visits each of the group's calls once, in order, every page the same reads."""
    import re

    from runs.ingest import writer as ingest
    from runs.models import RefusalRow, Run
    from runs.pages.refusals import GROUP_ROWS_SHOWN, PAGE_ROWS

    run = Run.objects.create(name="paged")
    ingest.append(run, refusal_roster(7, 10))  # 70 shell refusals: the first few, then pages of PAGE_ROWS
    html = get(viewer_client, "refusals", run.pk)
    seen = [t for t, text in rows(html, "data-turn") if "gg.shell.shell" in text]
    pages = 0
    while m := re.search(r'hx-get="([^"]*key=shell.shell[^"]*)"', html):
        url = m[1].replace("&amp;", "&")
        with django_assert_num_queries(6):  # the session, the user, the run, the agent, the group, its page
            response = viewer_client.get(url)
        assert response.status_code == 200
        html = response.content.decode()
        seen += [t for t, _ in rows(html, "data-turn")]
        pages += 1
    assert pages == -(-(70 - GROUP_ROWS_SHOWN) // PAGE_ROWS) and len(seen) == 70
    want = RefusalRow.objects.filter(run=run, key="shell.shell", entry=True).order_by("seq").values_list("turn", flat=True)
    assert seen == [str(t) for t in want]
    assert viewer_client.get(url.replace("key=shell.shell", "key=nothing")).status_code == 404


@pytest.mark.parametrize("n", [3, 250])
def test_the_roster_lists_a_page_of_the_agents_that_refused_the_same_reads_whatever_their_number(
        viewer_client, django_assert_num_queries, n):
    run = Run.objects.create(name="refusing")
    ingest.append(run, refusing_agents(n))
    viewer_client.get(reverse("runs:refusals", args=[run.pk]))
    with django_assert_num_queries(QUERIES):
        html = get(viewer_client, "refusals", run.pk)
    listed = [a for a, _ in rows(html, "data-agent")]
    assert listed == [f"worker-{i:03d}" for i in range(min(n, REFUSING_SHOWN))]
    assert f'<b id="refused-total">{n}</b>' in html  # the figures count every agent
    if n <= REFUSING_SHOWN:
        assert 'id="refusal-pages"' not in html
        return
    assert "Agents 1–100 of 250 that refused" in html and f'href="?agents={REFUSING_SHOWN}"' in html
    last = get(viewer_client, "refusals", run.pk, query="agents=200")
    assert [a for a, _ in rows(last, "data-agent")] == [f"worker-{i:03d}" for i in range(200, 250)]
    assert 'href="?agents=100">← before' in last and "after →" not in last


def test_the_search_finds_refusals_across_the_runs_pages(viewer_client):
    run = Run.objects.create(name="refusing")
    ingest.append(run, refusing_agents(250))
    board = get(viewer_client, "refusals", run.pk, query="q=BOARD")  # any case, past the first page
    assert [a for a, _ in rows(board, "data-agent")] == [f"worker-{i:03d}" for i in range(0, 250, 7)]
    assert "36 agents with refusals matching it" in board and 'value="BOARD"' in board
    assert '<b id="refused-total">250</b>' in board  # the figures stay the run's
    assert '<a href="?q=board.create_issue" title="the refusals of board.create_issue, by agent">36</a>' in board
    for spelled in ("gg.board.create_issue", "gg::board::create_issue", "board.createIssue"):  # any arm's
        assert rows(get(viewer_client, "refusals", run.pk, query=f"q={spelled}"), "data-agent") == rows(board, "data-agent")
    one = get(viewer_client, "refusals", run.pk, query="q=worker-249")  # an agent by its id
    assert [a for a, _ in rows(one, "data-agent")] == ["worker-249"] and "gg.shell.shell" not in one.split("Search")[0]
    paged = get(viewer_client, "refusals", run.pk, query="q=shell&agents=100")
    assert 'href="?q=shell&amp;agents=0">← before' in paged and 'href="?q=shell&amp;agents=200">after' in paged
    hostile = get(viewer_client, "refusals", run.pk, query="q=%3Cscript%3Ex")
    assert "No refused call matches “&lt;script&gt;x”." in hostile and "<script>x" not in hostile
