"""The WebSocket origin check compares scheme, host and port exactly (issue 19: a page on
``http://localhost:3000`` used to open the feed served on ``localhost:8000`` with the user's cookie)."""

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client, override_settings

from gg_console.asgi import application
from gg_console.origins import origin_allowed
from runs.models import Run


def scope(host=None, scheme="ws"):
    return {"scheme": scheme, "headers": [(b"host", host.encode())] if host else []}


@pytest.mark.parametrize("origin, host, scheme, allowed", [
    ("http://localhost:8000", "localhost:8000", "ws", True),
    ("http://LOCALHOST:8000", "localhost:8000", "ws", True),
    ("http://localhost:3000", "localhost:8000", "ws", False),  # another port
    ("https://localhost:8000", "localhost:8000", "ws", False),  # another scheme
    ("http://127.0.0.1:8000", "localhost:8000", "ws", False),  # another host
    ("https://localhost", "localhost", "wss", True),
    ("https://localhost:443", "localhost", "wss", True),
    ("http://localhost", "localhost", "wss", False),
    ("http://evil.example:8000", "evil.example:8000", "ws", False),  # not an allowed host
    ("null", "localhost:8000", "ws", False),
    ("", "localhost:8000", "ws", False),
    ("http://localhost:notaport", "localhost:8000", "ws", False),
    ("http://testserver", None, "ws", True),  # no Host header: the default port of an allowed host
    ("http://testserver:3000", None, "ws", False),
])
def test_origin_rule(origin, host, scheme, allowed):
    assert origin_allowed(origin, scope(host, scheme)) is allowed


@override_settings(CSRF_TRUSTED_ORIGINS=["https://console.example"])
def test_a_trusted_origin_behind_a_proxy_is_listed_exactly():
    assert origin_allowed("https://console.example", scope("127.0.0.1:8000"))
    assert not origin_allowed("https://console.example:8443", scope("127.0.0.1:8000"))


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_the_feed_socket_refuses_another_port_of_the_same_host(operator):
    from channels.db import database_sync_to_async

    run = await database_sync_to_async(Run.objects.create)(name="origins")
    client = Client()
    await database_sync_to_async(client.force_login)(operator)
    cookie = (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())
    for origin, ok in ((b"http://localhost:8000", True), (b"http://localhost:3000", False)):
        comm = WebsocketCommunicator(application, f"/ws/runs/{run.pk}/feed/",
                                     headers=[(b"host", b"localhost:8000"), (b"origin", origin), cookie])
        connected, _ = await comm.connect()
        assert connected is ok, origin
        await comm.disconnect()
