"""The scale path: Daphne on channels-redis, a producer in another process appending through the
real write path, and a connected socket that sees the events arrive by the doorbell."""

import asyncio
import json
import time

import pytest

from tests.console_server import ConsoleServer
from runs.feed.consumer import HEARTBEAT_SECONDS
from tests.feed_helpers import cursor, seqs

websockets = pytest.importorskip("websockets")

pytestmark = pytest.mark.scale

REDIS_URL = "redis://127.0.0.1:6379/7"


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
    session_key, pk = redis_server.operator_session_and_run("redis-feed")

    def produce(first, n):
        lines = "".join(json.dumps({"type": "log", "level": "info", "message": f"line {first + i}"}) + "\n"
                        for i in range(n))
        redis_server.manage("ingest", "-", "--run", "redis-feed", input=lines)

    async def follow():
        url, headers = redis_server.feed_socket(pk, session_key)
        async with websockets.connect(url, additional_headers=headers) as socket:
            connected = time.monotonic()
            got = []
            for first, n in ((1, 3), (4, 2)):
                await asyncio.to_thread(produce, first, n)
                while len(got) < first + n - 1:
                    message = await asyncio.wait_for(socket.recv(), timeout=10)
                    got += seqs(message)
                    if 'id="feed-cursor"' in message:
                        await socket.send(json.dumps({"ack": cursor(message)}))
            # Before the consumer's first idle re-read: only the doorbell, through Redis, could
            # have told it.
            assert time.monotonic() - connected < HEARTBEAT_SECONDS
            return got

    assert asyncio.run(follow()) == [1, 2, 3, 4, 5]
