"""The Refusals tab (runs/pages/refusals.py): the roster per agent per turn, with the caps' counts."""

import pytest

from tests.pages_helpers import get, load, rows

pytestmark = pytest.mark.django_db


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
