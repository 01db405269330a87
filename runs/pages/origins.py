"""Where a page's facts were reported: the record behind a store's lifetime step or a divergence."""

from __future__ import annotations

from runs.models import Event, Run
from runs.stream.record import gg_record


def roster_records(run: Run) -> dict:
    """Where the Stores and Divergences pages' facts were reported: {"modules": {agent_id: seq of its
    agent_modules}, "transitions": {successor id: seq of the agent_transition that made it}} (one
    query over the two kinds, which come once per incarnation)."""
    out = {"modules": {}, "transitions": {}}
    # Sorted here, not by ORDER BY: SQLite would then walk the whole run in seq order (its primary
    # key) instead of looking the two types up in the (run, type, seq) index.
    rows = Event.objects.filter(run=run, type__in=("agent_modules", "agent_transition")).order_by()
    for seq, etype, agent_id, raw in sorted(rows.values_list("seq", "type", "agent_id", "raw")):
        if etype == "agent_modules":
            out["modules"].setdefault(agent_id, seq)
        else:
            to = gg_record(raw).get("toAgentId")
            if isinstance(to, str):
                out["transitions"].setdefault(to, seq)
    return out


ERROR_TURNS_SHOWN = 200


def error_turn_numbers(run: Run, agent_id: str, limit: int = ERROR_TURNS_SHOWN) -> list[dict]:
    """The agent's latest `limit` error turns, oldest first: [{turn, error, errorType, seq}] (one query)."""
    rows = list(Event.objects.filter(run=run, agent_id=agent_id, type="turn_outcome",
                                     raw__regex=r'"outcome"\s*:\s*"(error|fatal)"')
                .order_by("-seq").values_list("seq", "turn", "raw")[:limit])
    out = []
    for seq, turn, raw in reversed(rows):
        rec = gg_record(raw)
        if rec.get("outcome") in ("error", "fatal"):
            out.append({"seq": seq, "turn": turn, "error": rec.get("error") or rec.get("outcome"),
                        "error_type": rec.get("errorType") or ""})
    return out
