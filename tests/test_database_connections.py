"""The scale path's database connections under Daphne: Django's persistent connections are per
thread, and under ASGI each request runs in a thread of its own, so a connection kept open after its
request is never used again and waits for the garbage collector. PostgreSQL refuses connections past
its max_connections (the distributed bench's streams got "too many clients already"). Connections come
from a pool of at most twelve per process instead, handed back when a request ends."""

import json
import urllib.request

import psycopg
import pytest

from tests.console_server import ConsoleServer
from tests.ingest_helpers import PG

pytestmark = pytest.mark.scale


def test_requests_on_postgresql_reuse_pooled_connections_instead_of_leaving_them_open(pg_env, tmp_path):
    server = ConsoleServer(tmp_path)
    server.env["DATABASE_URL"] = pg_env["DATABASE_URL"]
    server.setup()
    _, run_pk = server.operator_session_and_run("connections")
    database = pg_env["DATABASE_URL"].rsplit("/", 1)[1]
    server.start()
    try:
        for i in range(60):
            request = urllib.request.Request(
                f"{server.url}/api/runs/{run_pk}/events", method="POST",
                data=json.dumps({"type": "log", "level": "info", "message": f"line {i}"}).encode(),
                headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"})
            with urllib.request.urlopen(request, timeout=30) as response:
                assert response.status in (200, 201, 202)
        with psycopg.connect(PG + "postgres", autocommit=True) as admin:
            open_now = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [database]).fetchone()[0]
    finally:
        server.stop()
    # Sixty requests, one after another, each on its own thread: they share the pool's connections
    # instead of leaving one open behind each of them (the pool's max_size in settings is 12).
    assert 1 <= open_now <= 12, f"{open_now} connections open after 60 requests"
