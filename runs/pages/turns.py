"""A turn as an address: ``/runs/<pk>/agents/<agent>/turns/<n>/``.

What one agent did in its turn n, read from the records the fold stamped with that turn (one
indexed query, bounded by the turn, not the run): the window the model was sent (`prompt` pointers
into the agent's pool, each with its residency and cost share) and what it answered, its program(s)
or tool calls with their results and durations, shell commands, refusals, a compaction at its top,
the context it filled and how full, its outcome and its `turn_timing` split. Every record of the
turn is listed, each linking to its own page.
"""

from __future__ import annotations

from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from runs.access import run_or_404
from runs.models import Agent, Event, Run
from runs.stream.usage import breakdown_bands
from runs.pages import calls as call_pairs
from runs.pages import material, programs
from runs.pages.events import clock, offset
from runs.pages.common import paged, run_context
from runs.stream.record import gg_record
from runs.stream.refusals import REFUSED_LINE

# A program looping over a workspace makes thousands of calls in one turn: its records a page at a
# time (`?records=N`), its calls' first rows under the program (runs/_program.html).
RECORDS_SHOWN = 300

def _messages(rows) -> dict:
    """The turn's request as the model was sent it: [{id, band, new, message}] in order, those it
    sent new (`new`), `defined` ({id: message} of the bodies this turn pooled) and the answer (the
    reply's pool entry)."""
    pool, prompt = {}, {}
    for row in rows:
        if row[1] == "context_message":
            rec = gg_record(row[-1])
            if isinstance(rec.get("id"), str):
                pool[rec["id"]] = {**rec, "seq": row[0]}
        elif row[1] == "prompt":
            prompt = {**gg_record(row[-1]), "seq": row[0]}
    request = []
    for pointer in prompt.get("request") if isinstance(prompt.get("request"), list) else ():
        if not isinstance(pointer, dict):
            continue
        message = pool.get(pointer["id"]) if isinstance(pointer.get("id"), str) else None
        request.append({"id": pointer.get("id"), "band": pointer.get("source"), "new": message is not None,
                        "message": message})
    answer = pool.get(prompt["responseId"]) if isinstance(prompt.get("responseId"), str) else None
    new = [m for m in request if m["new"]]
    return {"prompt": prompt, "request": request, "new": new, "defined": pool, "answer": answer,
            "carried": len(request) - len(new)}


def turn_view(run: Run, agent: Agent, n: int) -> dict:
    rows = list(Event.objects.filter(run=run, agent_id=agent.agent_id, turn=n).order_by("seq")
                .values_list(*programs.TURN_COLUMNS))
    if not rows:
        raise Http404(f"{agent.agent_id} has no turn {n}.")
    by_type = {}
    for row in rows:
        by_type.setdefault(row[1], []).append(row)
    first = lambda etype: gg_record(by_type[etype][0][-1]) if etype in by_type else {}  # noqa: E731
    tool_calls = [c for c in call_pairs.pair_calls([r[:9] for r in rows if r[1] in call_pairs.CALL_TYPES])
                  if c.surface == "tool"]
    args = {r[0]: gg_record(r[-1]) for r in by_type.get("tool_call", ())}
    results = {r[0]: gg_record(r[-1]) for r in by_type.get("tool_result", ())}
    refusals = []
    for row in by_type.get("log", ()):
        message = gg_record(row[-1]).get("message")
        if isinstance(message, str) and (m := REFUSED_LINE.search(message)):
            refusals.append({"seq": row[0], "written": m["name"], "message": m["message"].strip()})
    breakdown = first("context_breakdown")
    messages = _messages(rows)
    if messages["prompt"]:  # the whole window, each item with its residency and its share of the bill
        messages["window"] = material.turn_window(run, agent, n, messages["prompt"], messages["defined"])
    return {
        "n": n, "rows": rows, "start": rows[0][4], "end": rows[-1][4],
        "clock": clock(rows[0][4]), "offset": offset(run, rows[0][4]),
        "span_ms": call_pairs.ms_between(rows[0][4], rows[-1][4]),
        "outcome": first("turn_outcome"), "timing": call_pairs.timing_split(first("turn_timing")),
        "messages": messages, "texts": [gg_record(r[-1]).get("text") for r in by_type.get("assistant_message", ())],
        "programs": programs.programs_of_turn(run, agent.agent_id, rows),
        "tool_calls": [{"call": c, "args": args.get(c.seq, {}).get("args"), "result": results.get(c.result_seq, {})}
                       for c in tool_calls],
        "shells": [{**gg_record(r[-1]), "seq": r[0]} for r in by_type.get("shell", ())],
        "refusals": refusals,
        "bands": sorted(((b, t) for b, t in breakdown_bands(breakdown).items() if t), key=lambda bt: -bt[1]),
        "total_tokens": breakdown.get("totalTokens"),
        "window": breakdown.get("windowLimit"),
        "fullness": material.fullness(breakdown),
        "compactions": [{"seq": r[0], **material.compaction_figures(gg_record(r[-1]))} for r in by_type.get("compaction", ())],
    }


@require_GET
def turn_detail(request, pk, agent_id, n):
    run = run_or_404(pk)
    agent = run.agents.filter(agent_id=agent_id).first()
    if agent is None:
        raise Http404(f"Run {run.name!r} has no agent {agent_id!r}.")
    turn = turn_view(run, agent, n)
    records, record_pages = paged(turn["rows"], request.GET.get("records"), RECORDS_SHOWN)
    return render(request, "runs/turn.html", run_context(
        run, "agents", agent=agent, turn=turn, records=records, record_pages=record_pages,
        language=agent.program_language,
        prev_turn=n - 1 if n > 1 else None, next_turn=n + 1 if n < agent.turns else None))
