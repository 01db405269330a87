"""A database that does not answer (every pooled connection busy past the pool's timeout, the server
restarting) is a 503 with Retry-After: JSON on the API, for the programs that push streams, and the
error page in words elsewhere. A restart of the database fails no request (a pooled connection is
checked before it is handed out), and once a database that was down answers again the console
recovers by itself."""

import json
import time
import urllib.error
import urllib.request

import psycopg
import pytest

from tests.console_server import ConsoleServer
from tests.ingest_helpers import PG

pytestmark = pytest.mark.scale


def _ask(request):
    """(status, headers, body) of a request, whatever its status."""
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode()


def test_a_database_that_does_not_answer_is_a_503_and_the_console_recovers(pg_env, tmp_path):
    server = ConsoleServer(tmp_path)
    server.env["DATABASE_URL"] = pg_env["DATABASE_URL"]
    server.setup()
    session_key, run_pk = server.operator_session_and_run("busy")
    database = pg_env["DATABASE_URL"].rsplit("/", 1)[1]

    def push(message):
        return _ask(urllib.request.Request(
            f"{server.url}/api/runs/{run_pk}/events", method="POST",
            data=json.dumps({"type": "log", "level": "info", "message": message}).encode(),
            headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"}))

    page = urllib.request.Request(f"{server.url}/", headers={"Cookie": f"sessionid={session_key}"})
    server.start()
    try:
        with psycopg.connect(PG + "postgres", autocommit=True) as admin:
            def drop_connections():
                admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [database])

            assert push("before")[0] == 200
            drop_connections()  # as a restart of the database does: the pool's connections are dead
            assert push("restarted")[0] == 200
            assert _ask(page)[0] == 200
            admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS false')
            drop_connections()
            try:
                status, headers, body = push("while down")
                assert status == 503, body
                assert headers["Retry-After"] == "5"
                assert "did not answer in time" in json.loads(body)["error"]
                status, headers, body = _ask(page)
                assert status == 503
                assert headers["Retry-After"] == "5"
                assert "The database is busy" in body
            finally:
                admin.execute(f'ALTER DATABASE "{database}" ALLOW_CONNECTIONS true')
        deadline = time.monotonic() + 60  # the pool reconnects in the background, backing off
        while (answer := push("after"))[0] != 200 and time.monotonic() < deadline:
            time.sleep(1)
        assert answer[0] == 200, answer
        assert _ask(page)[0] == 200
    finally:
        server.stop()
    with psycopg.connect(PG + database) as conn:
        stored = conn.execute("SELECT raw FROM runs_event WHERE run_id = %s ORDER BY seq", [run_pk]).fetchall()
    messages = [json.loads(raw)["message"] for raw, in stored]
    assert messages[:2] == ["before", "restarted"] and messages[-1] == "after" and "while down" not in messages
