"""The scale path's database connections under Daphne.

Django's persistent connections are per thread, and under ASGI each request runs in a thread of its
own, so a connection kept open after its request is never used again and waits for the garbage
collector; PostgreSQL refuses connections past its max_connections (the distributed bench's streams
got "too many clients already"). Connections come from a pool of at most twelve per process instead,
handed back when a request ends, and checked before they are handed out.

A database that does not answer (every pooled connection busy past the pool's timeout, the server
restarting) is a 503 with Retry-After: JSON on the API, for the programs that push streams, and the
error page in words elsewhere."""

import json
import time
import urllib.request

import psycopg
import pytest

from tests.console_server import ConsoleServer, ask
from tests.ingest_helpers import PG

pytestmark = pytest.mark.scale


@pytest.fixture
def pg_server(pg_env, tmp_path):
    """(a Daphne on its own PostgreSQL database, an operator's session key, a run's pk, the database's name)."""
    server = ConsoleServer(tmp_path)
    server.env["DATABASE_URL"] = pg_env["DATABASE_URL"]
    server.setup()
    session_key, run_pk = server.operator_session_and_run("connections")
    server.start()
    try:
        yield server, session_key, run_pk, pg_env["DATABASE_URL"].rsplit("/", 1)[1]
    finally:
        server.stop()


def _push(server, run_pk, message):
    return server.push_events(run_pk, json.dumps({"type": "log", "level": "info", "message": message}).encode())


def test_requests_on_postgresql_reuse_pooled_connections_instead_of_leaving_them_open(pg_server):
    server, _, run_pk, database = pg_server
    for i in range(60):
        assert _push(server, run_pk, f"line {i}")[0] == 200
    with psycopg.connect(PG + "postgres", autocommit=True) as admin:
        open_now = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [database]).fetchone()[0]
    # Sixty requests, one after another, each on its own thread: they share the pool's connections
    # instead of leaving one open behind each of them (the pool's max_size in settings is 12).
    assert 1 <= open_now <= 12, f"{open_now} connections open after 60 requests"


def test_a_database_that_does_not_answer_is_a_503_and_the_console_recovers(pg_server):
    server, session_key, run_pk, database = pg_server
    page = urllib.request.Request(f"{server.url}/", headers={"Cookie": f"sessionid={session_key}"})
    with psycopg.connect(PG + "postgres", autocommit=True) as admin:
        def drop_connections():
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [database])

        assert _push(server, run_pk, "before")[0] == 200
        drop_connections()  # as a restart of the database does: the pool's connections are dead
        assert _push(server, run_pk, "restarted")[0] == 200
        assert ask(page)[0] == 200
        admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
        drop_connections()
        try:
            status, headers, body = _push(server, run_pk, "while down")
            assert status == 503, body
            assert headers["Retry-After"] == "5"
            assert "did not answer in time" in json.loads(body)["error"]
            status, headers, body = ask(page)
            assert status == 503
            assert headers["Retry-After"] == "5"
            assert "The database is busy" in body
        finally:
            admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
    deadline = time.monotonic() + 60  # the pool reconnects in the background, backing off
    while (answer := _push(server, run_pk, "after"))[0] != 200 and time.monotonic() < deadline:
        time.sleep(1)
    assert answer[0] == 200, answer
    assert ask(page)[0] == 200
    with psycopg.connect(PG + database) as conn:
        stored = conn.execute("SELECT raw FROM runs_event WHERE run_id = %s ORDER BY seq", [run_pk]).fetchall()
    messages = [json.loads(raw)["message"] for raw, in stored]
    assert messages[:2] == ["before", "restarted"] and messages[-1] == "after" and "while down" not in messages
