"""Time on the agent page: latency per operation and per tool, the turn_timing split per turn, and
generated tokens per second (runs.pages.calls does the arithmetic)."""

from __future__ import annotations

from runs.models import Agent, Event, Run
from runs.pages import calls
from runs.stream.record import gg_record

TIMING_TURNS_SHOWN = 120  # as the context chart


def turn_timings(run: Run, agent: Agent, limit: int = TIMING_TURNS_SHOWN) -> dict:
    """The agent's latest `limit` turn_timing splits, oldest first: {turns: [{turn, timing}], peak, more,
    since}; `since` is the seq of the turn_timing before them (0 when there is none): the agent's
    later records are those turns'."""
    rows = list(Event.objects.filter(run=run, agent_id=agent.agent_id, type="turn_timing")
                .order_by("-seq").values_list("seq", "turn", "raw")[:limit + 1])
    turns = [{"turn": turn, "timing": calls.timing_split(gg_record(raw))} for _, turn, raw in reversed(rows[:limit])]
    return {"turns": turns, "peak": max([t["timing"]["total"] for t in turns] + [1]), "more": len(rows) > limit,
            "since": rows[limit][0] if len(rows) > limit else 0}


def agent_timing(run: Run, agent: Agent) -> dict:
    """{latency: calls.latency_table rows, turns: turn_timings, throughput: pooled tokens/s} (three
    queries). Latency and throughput read the turns the chart shows (the latest TIMING_TURNS_SHOWN),
    so the page reads as much of a long-lived agent as of a short one."""
    turns = turn_timings(run, agent)
    window = {"agent_id": agent.agent_id, "seq__gt": turns["since"]}
    return {"latency": calls.latency_table(calls.pair_calls(calls.call_rows(run, **window))),
            "turns": turns, "throughput": calls.generated_throughput(run, **window)["run"]}
