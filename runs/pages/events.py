"""One stored record, and one rejected line, each on a page of its own and as JSON.

* ``/runs/<pk>/events/<seq>/`` — the record field by field and as JSON (complete: long strings
  fold, nothing is cut), its agent and turn, the records before and after (in the run and in the
  agent's stream), a call's other half with the time between them, a program in full.
* ``GET /api/runs/<run>/events/<seq>`` — the stored line itself, byte for byte.
* ``/runs/<pk>/rejected/<id>/`` and ``GET /api/runs/<run>/rejected/<id>`` — a line that was not
  stored: its number, the reason and its text (the first RejectedLine.RAW_LIMIT characters).

Every read is a fixed handful of indexed queries, whatever the size of the run.
"""

from __future__ import annotations

import json

from django.contrib.auth.decorators import login_not_required
from django.http import Http404, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from runs.access import readable_run, run_or_404, turn_url
from runs.stream.record import classify, clock, loads_record, parse_timestamp
from runs.models import Event, RejectedLine, Run
from runs.pages import calls, programs
from runs.pages.common import run_context

FOLD_CHARS = 240  # a string longer than this (or than FOLD_LINES lines) is shown folded, in full
FOLD_LINES = 6


def offset(run: Run, timestamp: str):
    """Seconds from the run's first gg stamp to `timestamp`, or None."""
    parsed = parse_timestamp(timestamp)
    if parsed is None or run.started_at is None:
        return None
    return (parsed - run.started_at).total_seconds()


def _value(value) -> dict:
    """One field's value for the template: text (folded when long) or JSON (folded when long)."""
    if isinstance(value, str):
        text, kind = value, "text"
    else:
        text, kind = json.dumps(value, indent=2, ensure_ascii=False), "json"
    long = len(text) > FOLD_CHARS or text.count("\n") >= FOLD_LINES
    head = text.split("\n", 1)[0][:FOLD_CHARS]
    return {"kind": kind, "text": text, "folded": long, "head": head, "chars": len(text)}


def record_fields(raw: str):
    """(the stored line parsed, its gg record or None, [(field, value)] of the gg record — or of the
    line when it carries none). The line was stored because it parsed, so this never fails."""
    obj = loads_record(raw)
    _, rec = classify(obj)
    shown = rec if rec is not None else obj
    return obj, rec, [(key, _value(value)) for key, value in shown.items()]


def neighbours(run: Run, event: Event) -> dict:
    """The records before and after, in the run and in the agent's own stream (four indexed reads)."""
    mine = Event.objects.filter(run=run, agent_id=event.agent_id)
    before = mine.filter(seq__lt=event.seq).order_by("-seq").values_list("seq", flat=True).first()
    after = mine.filter(seq__gt=event.seq).order_by("seq").values_list("seq", flat=True).first()
    prev_seq = Event.objects.filter(run=run, seq__lt=event.seq).order_by("-seq").values_list("seq", flat=True).first()
    next_seq = Event.objects.filter(run=run, seq__gt=event.seq).order_by("seq").values_list("seq", flat=True).first()
    return {"prev": prev_seq, "next": next_seq, "agent_prev": before, "agent_next": after}


@require_GET
def event_detail(request, pk, seq):
    run = run_or_404(pk)
    event = Event.objects.filter(run=run, seq=seq).first()
    if event is None:
        raise Http404(f"Run {run.name!r} has no record {seq}.")
    obj, rec, fields = record_fields(event.raw)
    other, between = calls.other_half(run, event)
    context = run_context(
        run, "feed", event=event, fields=fields, wrapped=rec is not None and rec is not obj,
        pretty=json.dumps(obj, indent=2, ensure_ascii=False), around=neighbours(run, event),
        other=other, between_ms=between, clock=clock(event.timestamp), offset=offset(run, event.timestamp),
        turn_href=turn_url(run.pk, event.agent_id, event.turn),
        program=programs.program_of(run, event) if event.type == "code_execution" else None,
        language=run.agents.filter(agent_id=event.agent_id).values_list("program_language", flat=True).first() or "",
    )
    return render(request, "runs/event.html", context)


@require_GET
def rejected_detail(request, pk, line_id):
    run = run_or_404(pk)
    line = get_object_or_404(RejectedLine, run=run, pk=line_id)
    return render(request, "runs/rejected.html", run_context(
        run, "overview", line=line, truncated=len(line.raw) >= RejectedLine.RAW_LIMIT))


def _api_read(request, run, fetch, missing: str):
    """(fetch(the run), None) when the caller may read the run and fetch finds the row, else
    (None, the refusal or a 404 saying the run has `missing`)."""
    found, refused = readable_run(request, run)
    if refused:
        return None, refused
    row = fetch(found)
    if row is None:
        return None, JsonResponse({"error": f"Run {found.name!r} has {missing}."}, status=404)
    return row, None


@login_not_required
@require_GET
def api_event(request, run, seq):
    """The stored line of record `seq`, exactly as received (application/json)."""
    raw, refused = _api_read(request, run, lambda found: Event.objects.filter(run=found, seq=seq).values_list(
        "raw", flat=True).first(), f"no record {seq}")
    if refused:
        return refused
    response = HttpResponse(raw, content_type="application/json; charset=utf-8")
    response["X-Seq"] = str(seq)
    return response


@login_not_required
@require_GET
def api_rejected(request, run, line_id):
    """A rejected line: {line, reason, text, truncated}."""
    line, refused = _api_read(request, run, lambda found: RejectedLine.objects.filter(run=found, pk=line_id).first(),
                              f"no rejected line {line_id}")
    if refused:
        return refused
    return JsonResponse({"line": line.line_number, "reason": line.reason, "text": line.raw,
                         "truncated": len(line.raw) >= RejectedLine.RAW_LIMIT},
                        json_dumps_params={"ensure_ascii": False})

