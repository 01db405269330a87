"""The machines on the Overview (runs/pages/machines.py): a machine's declared states in order with
what stood in each and where each instance stands now, its instances' paths, bounded, and a hostile
capability set read without harm."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from runs.ingest import writer as ingest
from runs.models import Run
from runs.pages import machines
from tests.pages_helpers import get, load, rows

pytestmark = pytest.mark.django_db

LOOP = {"slug": "loop", "name": "Loop", "capabilities": [{"id": "fsm", "enabled": True, "params": {"states": [
    {"name": "write", "agent": "w", "transitions": [{"to": "check"}]},
    {"name": "check", "agent": "w", "transitions": [{"to": "write"}, {"to": "<b>done</b>"}, {"nope": 1}]},
    {"name": "<b>done</b>", "agent": "w", "transitions": []},
    "not a state", {"name": 5}, {"name": "", "agent": "w"},
]}}]}


def machine_run(chains: int, steps: int, last: str = "check") -> Run:
    """`chains` instances of the machine `loop`, each `steps` incarnations alternating write / check,
    the last of each in `last`."""
    records = [{"type": "session_started", "capabilitySet": {"agents": [LOOP, {"slug": "w", "modelId": "m"}]}}]
    for c in range(chains):
        ids = [f"m{c}.{s}" for s in range(steps)]
        states = ["write" if s % 2 == 0 else "check" for s in range(steps - 1)] + [last]
        records += [{"type": "agent_spawned", "agentId": ids[0], "parentAgentId": "root", "profileId": "w"},
                    {"type": "fsm_state", "agentId": ids[0], "fsmId": "loop", "state": states[0], "profileId": "w"}]
        for s in range(1, steps):
            records += [{"type": "agent_transition", "agentId": ids[s - 1], "kind": "fsm", "toAgentId": ids[s],
                         "profileId": "w", "state": states[s]},
                        {"type": "agent_spawned", "agentId": ids[s], "parentAgentId": "root", "profileId": "w"},
                        {"type": "fsm_state", "agentId": ids[s], "fsmId": "loop", "state": states[s],
                         "from": states[s - 1], "profileId": "w"}]
        records.append({"type": "agent_status", "agentId": ids[-1], "status": "done"})
    run = Run.objects.create(name=f"loop-{chains}-{steps}")
    ingest.append(run, records)
    return run


def card(html):
    start = html.index('id="machine-1"')
    return html[start:html.index("</section>", start)]


def test_a_declared_machine_its_states_in_order_and_where_its_instance_stands(viewer_client):
    run = load("multi", "multi_agent.ndjson")  # review-flow: draft -> review, dispatched for issue DEMO-1
    html = card(get(viewer_client, "detail", run.pk))
    assert "<code>review-flow</code> Review flow" in html and "1 instance" in html
    states = rows(html, "data-state")
    assert states == [("draft", "draft runs drafter entry 1× entered → review"),
                      ("review", "review runs reviewer terminal 1× entered ended here: agent-5 done")]
    assert 'class="machine-state machine-now" data-state="review"' in html
    instance = html[html.index("<tbody>"):]
    assert 'href="/runs/%d/agents/agent-4/"' % run.pk in instance and "issue DEMO-1" in instance
    assert "<code>draft</code>" in instance and "<code>review</code>" in instance
    # the report carries what the card shows
    machine, = viewer_client.get(f"/api/runs/{run.pk}/report").json()["machines"]
    assert machine["fsmId"] == "review-flow" and machine["instances"] == 1
    assert [(s["name"], s["entries"], s["terminal"], s["ended"]) for s in machine["states"]] == [
        ("draft", 1, False, 0), ("review", 1, True, 1)]
    assert machine["latest"] == [{"issueId": "DEMO-1", "earlier": 0, "now": {"state": "review", "agentId": "agent-5",
                                                                            "status": "done"},
                                  "path": [{"state": "draft", "agentId": "agent-4"},
                                           {"state": "review", "agentId": "agent-5"}]}]
    # the shell has no instance of its own: the Agents tab says so rather than "never ran"
    tab = get(viewer_client, "agents", run.pk)
    assert "a machine: its states run under the profiles they name" in dict(rows(tab, "data-profile"))["review-flow"]
    assert f'<a href="/runs/{run.pk}/#machine-1">its instances</a>' in tab
    assert "<b>Review flow</b> <span class=\"muted\">a machine" in tab  # its details, not "never ran"


def test_a_run_no_machine_drove_has_no_machine_card(viewer_client):
    run = load("wrapped", "host_wrapped.ndjson")
    assert run.agents.exists()
    assert 'id="machine-1"' not in get(viewer_client, "detail", run.pk)
    assert machines.run_machines(run) == []


def test_a_machine_the_stream_does_not_declare_reads_as_entered(viewer_client):
    run = load("legacy", "legacy.ndjson")  # the built-in tdd machine, in the oldest fsm_state shape
    html = card(get(viewer_client, "detail", run.pk))
    assert "declares no machine <code>tdd</code>" in html
    assert [name for name, _ in rows(html, "data-state")] == ["test", "implement"]
    assert "not declared" not in html  # said once, above, not on every state


def test_a_hostile_declaration_is_read_without_harm_and_an_undeclared_state_is_marked(viewer_client):
    run = machine_run(chains=1, steps=3, last="<i>rogue</i>")
    html = card(get(viewer_client, "detail", run.pk))
    assert [name for name, _ in rows(html, "data-state")] == ["write", "check", "<b>done</b>", "<i>rogue</i>"]
    assert "<b>done</b>" not in html and "<i>rogue" not in html  # escaped
    assert "&lt;b&gt;done&lt;/b&gt;" in html and "→ write, &lt;b&gt;done&lt;/b&gt;" in html
    rogue = dict(rows(html, "data-state"))["<i>rogue</i>"]
    assert "not declared" in rogue and "ended here: m0.2 done" in rogue
    assert "0× entered" in dict(rows(html, "data-state"))["<b>done</b>"]


def test_paths_and_instances_are_bounded_and_the_page_reads_one_query_for_them(viewer_client, monkeypatch):
    monkeypatch.setattr(machines, "PATH_SHOWN", 4)
    monkeypatch.setattr(machines, "INSTANCES_SHOWN", 3)
    small, large = machine_run(chains=2, steps=6), machine_run(chains=7, steps=6)
    html = card(get(viewer_client, "detail", large.pk))
    assert "7 instances" in html and "The latest 3 of 7 instances." in html
    assert html.count("2 earlier … ") == 3 and html.count('class="machine-step"') == 3 * 4
    assert "m6.0" in html and "m3.0" not in html  # the latest instances first
    assert dict(rows(html, "data-state"))["write"].startswith("write runs w entry 21× entered")
    assert dict(rows(html, "data-state"))["check"].endswith("21× entered 7 ended here → write, <b>done</b>")
    ingest.append(large, [{"type": "agent_status", "agentId": "m6.5", "status": "running"}])
    html = card(get(viewer_client, "detail", large.pk))
    assert "1 here now · 6 ended here" in dict(rows(html, "data-state"))["check"]

    def queries(run):
        with CaptureQueriesContext(connection) as ctx:
            get(viewer_client, "detail", run.pk)
        return len(ctx.captured_queries)

    assert queries(small) == queries(large)


def test_each_state_s_entries_link_the_incarnations_that_stood_in_it(viewer_client, monkeypatch):
    from runs.pages import agents

    monkeypatch.setattr(agents, "AGENTS_SHOWN", 4)
    run = machine_run(chains=2, steps=7, last="write")  # 4 writes and 3 checks an instance
    html = card(get(viewer_client, "detail", run.pk))
    link = f"/runs/{run.pk}/agents/?machine=loop&amp;state=check#agent-roster"
    assert f'<a href="{link}" title="the incarnations that stood in it">6× entered</a>' in html
    roster = get(viewer_client, "agents", run.pk, query="machine=loop&state=check")
    listed = rows(roster, "data-agent")
    assert "stood in state <b>check</b> of machine <code>loop</code>" in roster
    assert len(listed) == 4 and 'href="?machine=loop&amp;state=check&amp;agents=4"' in roster  # the next page keeps it
    rest = rows(get(viewer_client, "agents", run.pk, query="machine=loop&state=check&agents=4"), "data-agent")
    assert sorted(a for a, _ in listed + rest) == sorted(f"m{c}.{s}" for c in range(2) for s in (1, 3, 5))
    assert "No incarnation stood in this state." in get(viewer_client, "agents", run.pk, query="machine=other&state=check")
