"""The console's answer to a request that failed on the server: 503 with Retry-After when the
database did not answer (every pooled connection busy past the pool's timeout, a locked SQLite file
past its busy timeout, the server restarting), which passes; 500 for anything else. JSON on the API,
whose clients are programs; the standalone error page elsewhere. And its 404 page, which says why
when the view said."""

import sys

from django.db import OperationalError
from django.http import HttpResponse, JsonResponse
from django.shortcuts import render
from django.template.loader import render_to_string
from django.urls import Resolver404

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
    return render(request, "404.html", {"request_path": request.path, "reason": reason}, status=404)
