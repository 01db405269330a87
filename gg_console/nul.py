"""Requests holding a NUL character are refused (400, saying where) before a session, view or token
lookup reads them. Nothing the console stores can hold one — names are refused with it, stream
records have theirs escaped — and PostgreSQL's text cannot at all: there, a lookup by an address, a
filter, a cookie or a token with a NUL in it failed with a 500 where SQLite found nothing. A socket
whose handshake holds one is refused the same way."""

from urllib.parse import unquote_to_bytes

from channels.security.websocket import WebsocketDenier
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
    # A page's form only: an upload is read by its view, and the API's bodies are streams (sent with a
    # form's content type by curl's --data-binary) whose NULs are escaped, not refused.
    if (request.method == "POST" and request.content_type == FORM and not request.path.startswith("/api/")
            and _holds_nul(request.POST.lists())):
        return "The form"
    return None


class RefuseNul(MiddlewareMixin):
    def process_request(self, request):
        where = nul_in(request)
        if where:
            raise NulInRequest(f"{where} holds a NUL character (%00), which nothing in this "
                               "console can hold: no run, agent, store or filter is named with one.")


class RefuseNulSocket:
    """ASGI middleware denying a WebSocket whose address, query string or a header holds a NUL, before
    the session middleware looks its cookie up."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket" and (
                "\x00" in scope.get("path", "") or b"\x00" in unquote_to_bytes(scope.get("query_string", b""))
                or any(b"\x00" in value for _, value in scope.get("headers") or [])):
            return await WebsocketDenier()(scope, receive, send)
        return await self.application(scope, receive, send)
