"""The facts' cohorts (runs.ingest.facts.agent_sums): an agent row's JSON summed by what it holds — a
number under its key, anything else (a flag, a text, a list where an object belongs) nothing."""

from runs.ingest.facts import agent_sums
from runs.models import Agent


def _agent(agent_id, **fields):
    return Agent(agent_id=agent_id, profile_id="worker", model_id="m", execution_mode="tool_calling", **fields)


def test_numbers_are_summed_and_anything_else_in_an_agent_row_is_not():
    tidy = _agent("a", turns=3, error_turn_count=1, error_turns={"timeout": 1}, tool_calls={"read": 2},
                  tool_failures={"read": 1}, api_failures={"files.read_file": 2}, context_bands={"docs_view": 40},
                  usage={"cost": {"comparable": 0.25}})
    odd = _agent("b", turns=1, error_turns={"timeout": True, "crash": "2"}, tool_calls={"read": 1.5, "x": None},
                 tool_failures=["read"], api_failures="files", context_bands={"docs_view": False, "search_results": 7,
                                                                              "other": 9},
                 usage={"cost": {"comparable": "NaN"}})
    [cohort] = agent_sums([tidy, odd], {"a": {"shell.shell": 2}, "b": {"shell.shell": 1, "files.write": 1}}).cohorts
    assert cohort == {
        "profile": "worker", "model": "m", "mode": "tool_calling", "language": "", "docViewTypes": "",
        "agents": 2, "turns": 4, "errorTurns": 1, "errorTurnsByKind": {"timeout": 1}, "calls": {"read": 3.5},
        "refusals": {"shell.shell": 3, "files.write": 1}, "failures": {"api files.read_file": 2, "tool read": 1},
        "bands": {"docs_view": 40, "search_results": 7}, "cost": 0.25}


def test_a_held_block_is_summed_again_when_its_agents_refusal_counts_changed():
    agents = [_agent("a", turns=1), _agent("b", turns=2)]
    before = agent_sums(agents, {"a": {"shell.shell": 1}})
    after = agent_sums(agents, {"a": {"shell.shell": 2}}, before.blocks)
    assert [c["refusals"] for c in after.cohorts] == [{"shell.shell": 2}]
    assert agent_sums(agents, {"a": {"shell.shell": 2}}, after.blocks).blocks == after.blocks
