"""The WebSocket origin check: a socket is opened only by a page of this very site.

The browser's ``Origin`` must name the scheme, host and port the socket was opened on (``ws`` from
``http``, ``wss`` from ``https``; the ``Host`` header the socket came with), the host one of
ALLOWED_HOSTS — or be listed exactly in CSRF_TRUSTED_ORIGINS (a proxy terminating TLS). A socket with
no Origin, or any other, is refused: ``http://localhost:3000`` does not open a feed served on
``localhost:8000``.
"""

from urllib.parse import urlsplit

from channels.security.websocket import WebsocketDenier
from django.conf import settings
from django.http.request import split_domain_port, validate_host

DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(scheme, host, port):
    """(scheme, host, port) with the scheme's default port filled in, or None."""
    if scheme not in DEFAULT_PORTS or not host:
        return None
    return scheme, host.lower(), port or DEFAULT_PORTS[scheme]


def parse_origin(text: str):
    try:
        parts = urlsplit(text)
        return _origin(parts.scheme.lower(), parts.hostname, parts.port)
    except ValueError:  # a port that is not a number
        return None


def origin_allowed(origin: str, scope) -> bool:
    """Whether a socket opened with `scope` (its scheme and Host header) may come from `origin`."""
    theirs = parse_origin(origin)
    if theirs is None:
        return False
    if any(theirs == parse_origin(trusted) for trusted in settings.CSRF_TRUSTED_ORIGINS):
        return True
    scheme = "https" if scope.get("scheme") in ("wss", "https") else "http"
    headers = dict(scope.get("headers") or [])
    host_header = headers.get(b"host", b"").decode("latin-1")
    if host_header:
        host, port = split_domain_port(host_header.lower())
        try:
            ours = _origin(scheme, host, int(port) if port else None)
        except ValueError:
            return False
    else:  # no Host header (an in-process client): the site's default port on an allowed host
        ours = _origin(scheme, theirs[1], None)
    return ours is not None and theirs == ours and validate_host(ours[1], settings.ALLOWED_HOSTS)


class SameOriginValidator:
    """ASGI middleware refusing a WebSocket whose Origin is not this site's (see the module)."""

    def __init__(self, application):
        self.application = application

    async def __call__(self, scope, receive, send):
        if scope["type"] == "websocket":
            origin = dict(scope.get("headers") or []).get(b"origin", b"").decode("latin-1")
            if not origin_allowed(origin, scope):
                denier = WebsocketDenier()
                return await denier(scope, receive, send)
        return await self.application(scope, receive, send)
