"""Requests holding a NUL character are refused (400, saying where) before a session, view or token
lookup reads them. Nothing the console stores can hold one — names are refused with it, stream
records have theirs escaped — and PostgreSQL's text cannot at all: there, a lookup by an address, a
filter, a cookie or a token with a NUL in it failed with a 500 where SQLite found nothing."""

from django.core.exceptions import SuspiciousOperation
from django.utils.deprecation import MiddlewareMixin

FORM = "application/x-www-form-urlencoded"


class NulInRequest(SuspiciousOperation):
    """Answered by gg_console.errors.bad_request with its message."""


def _holds_nul(pairs) -> bool:
    return any("\x00" in key or any("\x00" in value for value in values) for key, values in pairs)


def nul_in(request) -> str | None:
    """What part of the request holds a NUL character, or None."""
    if "\x00" in request.path:
        return "The address"
    if _holds_nul(request.GET.lists()):
        return "The query string"
    if any("\x00" in key or "\x00" in value for key, value in request.COOKIES.items()):
        return "A cookie"
    if "\x00" in request.headers.get("Authorization", ""):
        return "The Authorization header"
    # A form body only: an upload is read by its view, and a stream's NULs are escaped, not refused.
    if request.method == "POST" and request.content_type == FORM and _holds_nul(request.POST.lists()):
        return "The form"
    return None


class RefuseNul(MiddlewareMixin):
    def process_request(self, request):
        where = nul_in(request)
        if where:
            raise NulInRequest(f"{where} holds a NUL character (%00), which nothing in this "
                               "console can hold: no run, agent, store or filter is named with one.")
