"""The JSON/NDJSON endpoint of a run's stored stream: /api/runs/<run>/events

``<run>`` is the run's pk (all digits) or its name.

* ``GET ?after=<seq>`` — the stored records after that seq, one per line, exactly as received
  (NDJSON; header ``X-Last-Seq``). For a logged-in user or a bearer token.
* ``POST`` — an NDJSON body from a process pushing a live stream; ``Authorization: Bearer <key>``
  of an `IngestToken` is required (a session cookie is not enough: the endpoint is CSRF-exempt).
  Returns ``{"run", "name", "created", "stored", "rejected", "duplicates", "lines", "last_seq",
  "rejections": [{"line", "reason"}]}``; line numbers count from 1 in each request body.
  POST to a name no run has yet creates that run (source ``api``); an all-digits ref must name an
  existing run (404 otherwise). A token with run names writes only into those runs (403 otherwise).
  A name still held by a run being deleted answers 409 with ``Retry-After``; a run deleted while
  its body was read, 410.
"""

from django.contrib.auth.decorators import login_not_required
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt

from runs.access import bearer_token, readable_run, run_resolve, run_write_problem, token_scope_problem, unauthorized
from runs.ingest import services, writer
from runs.models import Run
from runs.ingest.views import ndjson_response
from runs.stream.record import whole_number


@csrf_exempt
@login_not_required
def run_events(request, run):
    if request.method == "GET":
        return _get(request, run)
    if request.method == "POST":
        return _post(request, run)
    response = JsonResponse({"error": "Use GET or POST."}, status=405)
    response["Allow"] = "GET, POST"
    return response


def _get(request, ref):
    run, refused = readable_run(request, ref)
    if refused:
        return refused
    after = request.GET.get("after", "0")
    try:
        after = int(after)
        if after < 0:
            raise ValueError
    except ValueError:
        return JsonResponse({"error": "after must be a seq: a whole number ≥ 0."}, status=400)
    return ndjson_response(run, after=after, request=request)


def _post(request, ref):
    token = bearer_token(request)
    if token is None:
        return unauthorized("Send Authorization: Bearer <ingest token>.")
    user = token.user
    run = run_resolve(ref)
    created = False
    scoped = token_scope_problem(token, run.name if run else ref)
    if scoped:
        return JsonResponse({"error": scoped}, status=403)
    if run is None:
        if whole_number(str(ref).strip()) is not None:
            return JsonResponse({"error": f"No run with id {ref}."}, status=404)
        try:
            run, created = services.run_get_or_create(name=str(ref), source=Run.Source.API, created_by=user)
        except services.RunNameTaken as exc:  # held by a run still being deleted: free again soon
            response = JsonResponse({"error": str(exc)}, status=409)
            response["Retry-After"] = "5"
            return response
        except ValueError as exc:
            return JsonResponse({"error": str(exc)}, status=400)
    problem = "" if created else run_write_problem(run, user)
    if problem:
        return JsonResponse({"error": problem}, status=403)
    try:
        result = writer.append_stream(run, request)
    except writer.RunGone as exc:  # deleted while this body was read
        return JsonResponse({"error": str(exc)}, status=410)
    return JsonResponse({"run": run.pk, "name": run.name, "created": created, **result.as_dict()})
