"""Where a page's facts were reported: the record behind a store's lifetime step or a divergence."""

from __future__ import annotations

from django.db.models import Min

from runs.models import Event, Run
from runs.stream.record import gg_record


def roster_records(run: Run, agent_ids) -> dict:
    """Where the Stores and Divergences pages' facts were reported, for the agents of `agent_ids` (those
    a page links: its first agent_modules and the agent_transition that made it): {"modules": {agent_id:
    seq of its agent_modules}, "transitions": {successor id: seq of the agent_transition that made it}}.
    Only those agents' rosters are read, and only their seqs (a run of 8,278 agents read every roster's
    line); the transitions are read whole, one a succession: the successor is named in the line."""
    ids = {i for i in agent_ids if "\x00" not in i}  # a NUL names no agent (nor can PostgreSQL text hold one)
    rosters = Event.objects.filter(run=run, type="agent_modules", agent_id__in=ids).order_by()
    out = {"modules": dict(rosters.values_list("agent_id").annotate(seq=Min("seq"))), "transitions": {}}
    # Sorted here, not by ORDER BY: SQLite would then walk the whole run in seq order (its primary
    # key) instead of looking the type up in the (run, type, seq) index.
    rows = Event.objects.filter(run=run, type="agent_transition").order_by()
    for seq, raw in sorted(rows.values_list("seq", "raw")) if ids else ():
        to = gg_record(raw).get("toAgentId")
        if isinstance(to, str) and to in ids:
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
