"""How Daphne takes a request's body, before Django sees it (installed by gg_console.asgi).

Daphne holds a whole body in memory before it hands it on, and Twisted under it parsed every form
body (whole, with the email package) in the event loop that serves every other request and socket
of the process, before Django's limits or login apply. So: no form parsing (Django parses the body
itself; nothing reads Twisted's), and a body over `GG_MAX_REQUEST_BYTES` is answered 413 and the
connection closed as soon as it is known to be too big, unread.

A body over `GG_MAX_ANONYMOUS_BYTES` must come from someone signed in: reading it pauses while a
thread asks the database whether its session or bearer token is an active user's, and a body of
no one's is answered 401, the rest unread (four anonymous 1,000 MB POSTs had held 2 GB of the
process and stalled its pages 4 s).
"""

from django.conf import settings
from django.db import close_old_connections
from daphne import http_protocol
from twisted.internet import threads

from runs.access import signed_in

TOO_BIG = (413, "Content Too Large", "a request body is at most {max:,} bytes here (GG_MAX_REQUEST_BYTES). A bigger "
           "stream: manage.py ingest PATH --run NAME, or POST it to /api/runs/<run>/events in parts.")
NO_ONES = (401, "Unauthorized", "a request body over {anonymous:,} bytes needs a signed-in session or "
           "Authorization: Bearer <ingest token> (GG_MAX_ANONYMOUS_BYTES).")
UNCHECKED = (503, "Service Unavailable", "who sent this body (over {anonymous:,} bytes) could not be checked just "
             "now (the database did not answer); send it again.")


def _vouched_for(authorization, session_key):
    close_old_connections()  # a thread of Twisted's pool, its connection kept between requests
    try:
        return signed_in(authorization, session_key)
    finally:
        close_old_connections()


class ConsoleRequest(http_protocol.WebRequest):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)
        self.body_bytes = 0
        self.refused = False
        self.vouch = None  # None (not asked), "asking", or True (signed in)
        self.received = None  # requestReceived's arguments, while asking

    def gotLength(self, length):
        super().gotLength(length)
        if length is not None and length > settings.GG_MAX_REQUEST_BYTES:
            self._refuse(TOO_BIG)
        elif length is not None and length > settings.GG_MAX_ANONYMOUS_BYTES:
            self._ask()

    def handleContentChunk(self, data):
        if self.refused:
            return
        self.body_bytes += len(data)  # a chunked body declares no length
        if self.body_bytes > settings.GG_MAX_REQUEST_BYTES:
            self._refuse(TOO_BIG)
            return
        if self.body_bytes > settings.GG_MAX_ANONYMOUS_BYTES and self.vouch is None:
            self._ask()
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if self.refused:
            return
        if self.vouch == "asking":  # the whole body came before the answer: it waits for it
            self.received = (command, path, version)
            return
        super().requestReceived(command, path, version)

    def _ask(self):
        self.vouch = "asking"
        self.channel.transport.pauseProducing()
        authorization = self.getHeader("authorization") or ""
        session = self.received_cookies.get(settings.SESSION_COOKIE_NAME.encode(), b"").decode("latin-1")
        asked = threads.deferToThread(_vouched_for, authorization, session)
        asked.addCallbacks(self._answered, lambda failure: self._answered(None))

    def _answered(self, ok):
        if self.refused or getattr(self, "channel", None) is None:  # refused, or the client went away
            return
        if not ok:
            self._refuse(NO_ONES if ok is False else UNCHECKED)
            return
        self.vouch = True
        self.channel.transport.resumeProducing()
        if self.received is not None:
            super().requestReceived(*self.received)

    def _refuse(self, answer):
        self.refused = True
        status, reason, text = answer
        body = (f"{status}: " + text.format(max=settings.GG_MAX_REQUEST_BYTES,
                                            anonymous=settings.GG_MAX_ANONYMOUS_BYTES) + "\n").encode()
        self.channel.transport.write(b"HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s"
                                     % (status, reason.encode(), len(body), body))
        self.channel.loseConnection()


def install():
    """Daphne's HTTPFactory builds each connection's requests from `http_protocol.WebRequest`."""
    http_protocol.WebRequest = ConsoleRequest
