"""Ten simultaneous first POSTs to a new run name (issue 19): they once lost 70 of 100 lines to 500s
and 400s. Ten threads POST 10 lines each at the same moment, spread over two Daphne processes on one
database (a Daphne runs sync views one at a time, so two processes are what makes the writes really
concurrent): every answer is 200, one run exists, and every line is stored exactly once. On the
embedded SQLite file and on PostgreSQL."""

import json
import threading
import urllib.request

import pytest

from tests.console_server import ConsoleServer
from tests.ingest_helpers import manage

POSTERS, LINES = 10, 10


def _servers(var_dir, database_url=None):
    first, second = ConsoleServer(var_dir), ConsoleServer(var_dir)
    for server in (first, second):
        if database_url:
            server.env["DATABASE_URL"] = database_url
    first.setup()
    second.token = first.token
    first.start()
    second.start()
    return first, second


def _post(server, name, body):
    status, _, text = server.push_events(name, body)
    return (status, json.loads(text)) if status == 200 else (status, text[:500])


def _race(servers, name):
    """Ten first POSTs to run `name` at once: (answers, the lines sent)."""
    bodies = [[json.dumps({"type": "log", "agentId": f"poster-{p}", "message": f"line {i}"}).encode()
               for i in range(LINES)] for p in range(POSTERS)]
    start = threading.Barrier(POSTERS)
    answers = [None] * POSTERS

    def poster(p):
        server = servers[p % len(servers)]
        start.wait()
        answers[p] = _post(server, name, b"\n".join(bodies[p]) + b"\n")

    threads = [threading.Thread(target=poster, args=(p,)) for p in range(POSTERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return answers, [line for body in bodies for line in body]


def _stored(server, name):
    request = urllib.request.Request(f"{server.url}/api/runs/{name}/events",
                                     headers={"Authorization": f"Bearer {server.token}"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return response.read().splitlines(), int(response.headers["X-Last-Seq"])


def _check_rounds(servers, rounds=3):
    for n in range(rounds):
        name = f"race-{n}"
        answers, sent = _race(servers, name)
        assert all(status == 200 for status, _ in answers), answers
        assert sum(body["stored"] for _, body in answers) == POSTERS * LINES
        assert sum(body["created"] for _, body in answers) == 1  # one POST made the run
        assert len({body["run"] for _, body in answers}) == 1
        stored, last_seq = _stored(servers[0], name)
        assert sorted(stored) == sorted(sent) and last_seq == POSTERS * LINES  # each line once, seq gapless


def test_ten_first_posts_at_once_on_the_embedded_sqlite(tmp_path):
    servers = _servers(tmp_path)
    try:
        _check_rounds(servers)
    finally:
        for server in servers:
            server.stop()


@pytest.mark.scale
def test_ten_first_posts_at_once_on_postgresql(pg_env, tmp_path):
    servers = _servers(tmp_path, pg_env["DATABASE_URL"])
    try:
        _check_rounds(servers)
        counted = "from runs.models import Event; print(Event.objects.filter(run__name__startswith='race-').count())"
        assert manage(pg_env, "shell", "-c", counted).stdout.split()[-1] == b"300"  # on PostgreSQL indeed
    finally:
        for server in servers:
            server.stop()
