"""Who may read a run, and which run a reference names: the glue every flow's views share (the
token API, the report, the inspector, compare), so none of them imports another flow's views.
"""

from __future__ import annotations

from django.http import JsonResponse

from runs.models import IngestToken, Run


def run_resolve(ref) -> Run | None:
    """A run by pk (all digits) or by name; None when there is none."""
    ref = str(ref).strip()
    if ref.isdigit():
        run = Run.objects.filter(pk=int(ref)).first()
        if run is not None:
            return run
    return Run.objects.filter(name=ref).first()


def bearer_token(request) -> IngestToken | None:
    """The `IngestToken` of an active user the request's ``Authorization: Bearer <key>`` names, or None."""
    header = request.headers.get("Authorization", "")
    scheme, _, key = header.partition(" ")
    if scheme.lower() != "bearer" or not key.strip():
        return None
    token = IngestToken.objects.select_related("user").filter(key=key.strip()).first()
    if token is None or not token.user.is_active:
        return None
    return token


def bearer_user(request):
    """The user of the request's bearer token (`bearer_token`), or None."""
    token = bearer_token(request)
    return token.user if token else None


def unauthorized(message):
    """A 401 JSON response naming what is missing, with the Bearer challenge."""
    response = JsonResponse({"error": message}, status=401)
    response["WWW-Authenticate"] = 'Bearer realm="gg console"'
    return response


def readable_run(request, ref):
    """(run, None) for a reader (a logged-in user or a bearer token), else (None, the error response)."""
    if not (request.user.is_authenticated or bearer_user(request)):
        return None, unauthorized("Log in or send Authorization: Bearer <token>.")
    run = run_resolve(ref)
    if run is None:
        return None, JsonResponse({"error": f"No run {ref!r}."}, status=404)
    return run, None
