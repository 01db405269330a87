"""The machines that drove a run (console.md §1.3, the dashboard's FSM state strip), on its Overview:
per machine (`fsmId`), its declared states in order (the shell profile's `fsm` capability, §3.4) with
what stood in each, and each instance of it — a chain of incarnations, one per state entered, linked
by their successions (a board can dispatch one machine per issue) — as the path it took and where it
stands now. Read off the Agent rows (one query, no log read).
"""

from __future__ import annotations

from runs.models import Run
from runs.stream.profiles import find_profile, profile_name
from runs.stream.record import as_list
from runs.stream.vocabulary import OPEN_AGENT_STATUSES

INSTANCES_SHOWN = 10  # a machine's latest instances listed (a board may dispatch hundreds)
PATH_SHOWN = 12  # an instance's latest steps listed (a machine with a loop may take thousands)


def declared_states(profile: dict | None) -> list[dict]:
    """A shell profile's states as its `fsm` capability declares them: [{name, agent, to}], in order
    (the first is the entry); what is not a well-formed state is left out (the stream is untrusted)."""
    states = []
    for cap in as_list((profile or {}).get("capabilities")):
        if isinstance(cap, dict) and cap.get("id") == "fsm" and isinstance(cap.get("params"), dict):
            for state in as_list(cap["params"].get("states")):
                if isinstance(state, dict) and isinstance(state.get("name"), str) and state["name"]:
                    to = [t["to"] for t in as_list(state.get("transitions"))
                          if isinstance(t, dict) and isinstance(t.get("to"), str) and t["to"]]
                    agent = state.get("agent")
                    states.append({"name": state["name"], "agent": agent if isinstance(agent, str) else "", "to": to})
            break
    return states


_STEP = ("agent_id", "fsm_id", "fsm_state", "status", "issue_id")  # what a step shows of its incarnation
_FSM_ID, _STATE = _STEP.index("fsm_id"), _STEP.index("fsm_state")


def run_machines(run: Run) -> list[dict]:
    """[{id, name, states, instances, instance_count}] for each machine an incarnation stood in."""
    # Tuples, not dicts or models: a board dispatching a machine per issue stands 100,000 incarnations in it.
    stood = run.agents.exclude(fsm_state="").order_by("first_seq").values_list("pk", "predecessor_id", *_STEP)
    chain_of: dict[int, int] = {}  # an incarnation's pk: its chain's first incarnation's pk
    chains: dict[int, list[tuple]] = {}
    for pk, predecessor, *step in stood:  # in seq order: a successor after its predecessor
        head = chain_of[pk] = chain_of.get(predecessor, pk)
        chains.setdefault(head, []).append(step)
    machines: dict[str, list[list[tuple]]] = {}
    for steps in chains.values():
        # A successor's fsmId arrives on its own fsm_state record: the chain's is any step's.
        fsm_id = next((step[_FSM_ID] for step in steps if step[_FSM_ID]), "")
        machines.setdefault(fsm_id, []).append(steps)
    return [_machine(run, fsm_id, instances) for fsm_id, instances in machines.items()]


def _machine(run: Run, fsm_id: str, instances: list[list[tuple]]) -> dict:
    profile = find_profile(run.capability_set, fsm_id)
    states = {s["name"]: {**s, "declared": True, "entries": 0, "now": []} for s in declared_states(profile)}
    for steps in instances:
        for step in steps:
            if step[_STATE] not in states:  # entered, not declared
                states[step[_STATE]] = {"name": step[_STATE], "agent": "", "to": [], "declared": False, "entries": 0,
                                        "now": []}
            states[step[_STATE]]["entries"] += 1
        states[steps[-1][_STATE]]["now"].append(dict(zip(_STEP, steps[-1])))
    for state in states.values():
        state["terminal"] = state["declared"] and not state["to"]
        # Standing: running or blocked, as a session's end closes them (any other status has ended).
        state["standing"] = sum(1 for last in state["now"] if last["status"] in OPEN_AGENT_STATUSES)
        state["ended"] = len(state["now"]) - state["standing"]
    shown = []
    for steps in reversed(instances[-INSTANCES_SHOWN:]):
        path = [dict(zip(_STEP, step)) for step in steps[-PATH_SHOWN:]]
        shown.append({"first": dict(zip(_STEP, steps[0])), "steps": path, "earlier": max(len(steps) - PATH_SHOWN, 0),
                      "now": path[-1]})
    return {"id": fsm_id, "name": profile_name(profile) if profile else "", "declared": profile is not None,
            "states": list(states.values()), "instance_count": len(instances), "instances": shown}
