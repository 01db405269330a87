"""The scale path: Daphne on channels-redis, a producer in another process appending through the
real write path, and a connected socket that sees the events arrive by the doorbell."""

import asyncio
import json
import time

import pytest

from tests.e2e.conftest import ConsoleServer
from runs.consumers import HEARTBEAT_SECONDS
from tests.test_feed_consumer import seqs

websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.scale

REDIS_URL = "redis://127.0.0.1:6379/7"

SESSION_FOR_OPERATOR = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from runs.models import Run
user = User.objects.get(username="operator")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key, Run.objects.create(name="redis-feed").pk)
"""



@pytest.fixture
def redis_server(tmp_path):
    try:
        import redis

        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=1).ping()
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"Redis at {REDIS_URL} does not answer ({exc}); scripts/services starts it")
    server = ConsoleServer(tmp_path)
    server.env["REDIS_URL"] = REDIS_URL
    server.setup()
    server.start()
    yield server
    server.stop()


def test_event_appended_by_another_process_reaches_a_connected_socket(redis_server):
    session_key, pk = redis_server.manage("shell", "-c", SESSION_FOR_OPERATOR).stdout.splitlines()[-1].split()

    def produce(first, n):
        lines = "".join(json.dumps({"type": "log", "level": "info", "message": f"line {first + i}"}) + "\n"
                        for i in range(n))
        redis_server.manage("ingest", "-", "--run", "redis-feed", input=lines)

    async def follow():
        url = redis_server.url.replace("http://", "ws://") + f"/ws/runs/{pk}/feed/?after=0"
        headers = {"Cookie": f"sessionid={session_key}", "Origin": redis_server.url}
        async with websockets.connect(url, additional_headers=headers) as socket:
            connected = time.monotonic()
            got = []
            for first, n in ((1, 3), (4, 2)):
                await asyncio.to_thread(produce, first, n)
                while len(got) < first + n - 1:
                    got += seqs(await asyncio.wait_for(socket.recv(), timeout=10))
            # Before the consumer's first idle re-read: only the doorbell, through Redis, could
            # have told it.
            assert time.monotonic() - connected < HEARTBEAT_SECONDS
            return got

    assert asyncio.run(follow()) == [1, 2, 3, 4, 5]
