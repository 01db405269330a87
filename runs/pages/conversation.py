"""One agent's conversation: ``/runs/<pk>/agents/<agent>/conversation/?from=<turn>``.

The opening brief (a subagent's, from `agent_spawned.brief`) or prompt, then per turn the messages
the model was newly sent (each with its band and tokens), what it answered, and the shell
commands it ran — from `prompt` / `context_message` / `assistant_message` / `shell`. A window of
TURNS_SHOWN turns per page (one query), so the page costs the same for 5 turns or 5,000.
"""

from __future__ import annotations

from collections import defaultdict

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Event
from runs.pages import programs
from runs.pages.common import run_context
from runs.stream.record import gg_record
from runs.pages.turns import _messages

TURNS_SHOWN = 25
TYPES = ("context_message", "prompt", "assistant_message", "shell", "turn_outcome")


def _first(value, default=1):
    try:
        return max(int(value), 1)
    except (TypeError, ValueError):
        return default


@require_GET
def conversation(request, pk, agent_id):
    run = run_or_404(pk)
    agent = run.agents.filter(agent_id=agent_id).first()
    if agent is None:
        raise Http404(f"Run {run.name!r} has no agent {agent_id!r}.")
    start = _first(request.GET.get("from"))
    end = start + TURNS_SHOWN - 1
    by_turn = defaultdict(list)
    rows = Event.objects.filter(run=run, agent_id=agent.agent_id, turn__gte=start, turn__lte=end, type__in=TYPES)
    for row in rows.order_by("seq").values_list(*programs.TURN_COLUMNS):
        by_turn[row[3]].append(row)
    turns = []
    for n in sorted(by_turn):
        turn_rows = by_turn[n]
        outcome = next((gg_record(r[-1]) for r in turn_rows if r[1] == "turn_outcome"), {})
        turns.append({"n": n, "messages": _messages(turn_rows), "outcome": outcome,
                      "texts": [gg_record(r[-1]).get("text") for r in turn_rows if r[1] == "assistant_message"],
                      "shells": [{**gg_record(r[-1]), "seq": r[0]} for r in turn_rows if r[1] == "shell"]})
    return render(request, "runs/conversation.html", run_context(
        run, "agents", agent=agent, turns=turns, start=start, end=min(end, agent.turns),
        earlier=max(start - TURNS_SHOWN, 1) if start > 1 else None,
        later=end + 1 if end < agent.turns else None))
