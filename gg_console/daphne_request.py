"""How Daphne takes a request's body, before Django sees it (installed by gg_console.asgi).

Daphne holds a whole body in memory before it hands it on, and Twisted under it parsed every form
body (whole, with the email package) in the event loop that serves every other request and socket
of the process, before Django's limits or login apply. So: no form parsing (Django parses the body
itself; nothing reads Twisted's), and a body over `GG_MAX_REQUEST_BYTES` is answered 413 and the
connection closed as soon as it is known to be too big, unread.
"""

from django.conf import settings
from daphne import http_protocol


class ConsoleRequest(http_protocol.WebRequest):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)
        self.body_bytes = 0
        self.refused = False

    def gotLength(self, length):
        super().gotLength(length)
        if length is not None and length > settings.GG_MAX_REQUEST_BYTES:
            self._refuse()

    def handleContentChunk(self, data):
        if self.refused:
            return
        self.body_bytes += len(data)  # a chunked body declares no length
        if self.body_bytes > settings.GG_MAX_REQUEST_BYTES:
            self._refuse()
            return
        super().handleContentChunk(data)

    def requestReceived(self, command, path, version):
        if not self.refused:
            super().requestReceived(command, path, version)

    def _refuse(self):
        self.refused = True
        text = (f"413: a request body is at most {settings.GG_MAX_REQUEST_BYTES:,} bytes here (GG_MAX_REQUEST_BYTES). "
                "A bigger stream: manage.py ingest PATH --run NAME, or POST it to /api/runs/<run>/events in parts.\n")
        body = text.encode()
        self.channel.transport.write(b"HTTP/1.1 413 Content Too Large\r\nContent-Type: text/plain; charset=utf-8\r\n"
                                     b"Connection: close\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
        self.channel.loseConnection()


def install():
    """Daphne's HTTPFactory builds each connection's requests from `http_protocol.WebRequest`."""
    http_protocol.WebRequest = ConsoleRequest
