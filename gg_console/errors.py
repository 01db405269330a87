"""The console's answer to a request that failed on the server: 503 with Retry-After when the
database did not answer (every pooled connection busy past the pool's timeout, a locked SQLite file
past its busy timeout, the server restarting), which passes; 500 for anything else. JSON on the API,
whose clients are programs; the standalone error page elsewhere. And its 400, 403 and 404 pages (JSON
on the API too), which say why (a host name it is not set to answer to, a request past Django's
limits, a NUL in it, what the view said), what to do about a form sent with an out-of-date CSRF
token, and the login's pause after too many failures."""

import sys

from django.conf import settings
from django.core.exceptions import DisallowedHost, RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent
from django.db import OperationalError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404, reverse

from gg_console.nul import NulInRequest

RETRY_AFTER_SECONDS = 5


def server_error(request):
    # Django calls this from its handler of the uncaught exception, with that exception at hand.
    busy = isinstance(sys.exc_info()[1], OperationalError)
    status = 503 if busy else 500
    if request.path.startswith("/api/"):
        message = (f"The database did not answer in time; try again in {RETRY_AFTER_SECONDS} s (a GET of the "
                   "run's events says in X-Last-Seq how far it is stored)." if busy
                   else "The server failed; the error is in its log.")
        response = JsonResponse({"error": message}, status=status)
    else:
        response = HttpResponse(render_to_string("500.html", {"busy": busy, "retry": RETRY_AFTER_SECONDS}),
                                status=status)
    if busy:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


def not_found(request, exception):
    # A view's Http404 names what is missing ("Run 'x' has no agent 'y'."); an address no route
    # matches (Resolver404) has only the address to show.
    said = exception.args[0] if exception.args and not isinstance(exception, Resolver404) else None
    reason = said if isinstance(said, str) else ""
    if request.path.startswith("/api/"):
        return JsonResponse({"error": reason or f"Nothing is at {request.path}."}, status=404)
    return render(request, "404.html", {"request_path": request.path, "reason": reason}, status=404)


def bad_request(request, exception):
    if isinstance(exception, DisallowedHost):  # a proxy or an address not yet in the settings, most likely
        reason = ("This console is not set to answer to the host name this request used; the names it answers "
                  "to are in DJANGO_ALLOWED_HOSTS (comma-separated).")
        # Every link of this host name meets the same refusal.
        return _refused(request, "Bad request", reason, 400, home=False)
    elif isinstance(exception, TooManyFieldsSent):
        reason = (f"The form sent more fields than the console reads in one request "
                  f"({settings.DATA_UPLOAD_MAX_NUMBER_FIELDS:,}, DATA_UPLOAD_MAX_NUMBER_FIELDS): send fewer (on the "
                  "launch form, fewer profiles or rows) or have the setting raised.")
    elif isinstance(exception, (RequestDataTooBig, TooManyFilesSent, NulInRequest)):
        reason = str(exception)  # Django's words name the setting; ours the part of the request
    else:
        reason = "The request could not be read."
    if request.path == reverse("runs:validate") and request.headers.get("HX-Request"):
        # The launch form's live check: htmx swaps only a 2xx answer, so the refusal is said in the
        # form's summary, the form left as typed.
        return render(request, "runs/launch/_unread.html", {"reason": reason})
    if request.method == "POST" and not request.path.startswith("/api/"):
        reason += " Nothing was done; the browser's Back button returns to the form as you filled it."
    return _refused(request, "Bad request", reason, 400)


def permission_denied(request, exception):
    # A view's PermissionDenied names the permission ("Deleting a run needs the runs.delete_run permission.").
    said = exception.args[0] if exception.args and isinstance(exception.args[0], str) else ""
    return _refused(request, "Not allowed", said or "Your account may not do this here.", 403, grant=True)


def csrf_failure(request, reason=""):
    # Django's reason ("CSRF cookie not set.") is for the log (it logs it); the operator needs what to do.
    return _refused(request, "Not allowed", (
        "This form was sent with an out-of-date security token: the page was opened before a log in or log "
        "out (here or in another tab), or the browser keeps no cookies for this site. Go back, reload the "
        "page and send the form again."), 403)


def _refused(request, heading, reason, status, grant=False, home=True):
    if request.path.startswith("/api/"):  # its clients are programs
        return JsonResponse({"error": reason}, status=status)
    return render(request, "refused.html", {"heading": heading, "reason": reason, "grant": grant, "home": home},
                  status=status)


def locked_out(request, original_response, credentials):
    # django-axes: this username has failed too often from this address (settings, AXES_*).
    return render(request, "registration/locked_out.html", {
        "username": (credentials or {}).get("username") or request.POST.get("username", ""),
        "limit": settings.AXES_FAILURE_LIMIT, "minutes": int(settings.AXES_COOLOFF_TIME.total_seconds() // 60),
    }, status=429)
