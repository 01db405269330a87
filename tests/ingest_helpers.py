"""Helpers the write-path tests share: a run stored through the real write path, nested records, and
every page a run has, fetched with a logged-in client."""

import itertools
import json
import subprocess
import sys

from django.urls import reverse

from runs.access import agent_url

from runs.models import Run
from runs.stream.record import MAX_DEPTH
from tests.paths import REPO

_names = itertools.count()
PG = "postgres://postgres@127.0.0.1:5432/"

DUMP = """
import json
from runs.models import Run
from tests.streams import projection_dump
print(json.dumps({r.name: projection_dump(r) for r in Run.objects.order_by("name")}, default=str, sort_keys=True))
"""

# Every page of every run, fetched by a logged-in client inside `manage.py shell`: {run: {url: status}}.
PAGES = """
import json
from django.contrib.auth.models import User
from django.test import Client
from runs.models import Run
from tests.ingest_helpers import page_statuses
client = Client()
client.force_login(User.objects.get_or_create(username="pages-viewer")[0])
print(json.dumps({r.name: page_statuses(client, r) for r in Run.objects.order_by("name")}))
"""

# Every page of one run (the agent page once per agent), by URL name.
RUN_PAGES = ("detail", "export", "feed", "feed_rows", "header", "agents", "stores", "divergences", "refusals",
             "arms", "api_report")


def new_run(**fields) -> Run:
    return Run.objects.create(name=f"write-path-{next(_names)}", **fields)


def nested(depth: int, leaf=1):
    """A JSON value `depth` levels of arrays deep (1: ``[leaf]``)."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


def nested_text(depth: int) -> str:
    """`nested(depth)` as JSON text, for depths no encoder walks."""
    return "[" * depth + "1" + "]" * depth


GOOD = [
    b'{"type":"session_started","agentId":"root","capabilitySet":{"agents":[{"slug":"p"}]}}',
    b'{"type":"agent_spawned","agentId":"root","profileId":"p","depth":0}',
    b'{"type":"log","agentId":"root","level":"info","message":"a pair \\ud83d\\ude00 is one character"}',
    b'{"type":"turn_started","agentId":"root"}',
]

# (line, the start of its rejection's reason): every one a valid JSON line no column can hold as it is.
BAD = [
    (b'{"type":[]}', "type is a JSON array"),
    (b'{"type":{"a":1},"agentId":"root"}', "type is a JSON object"),
    (b'{"type":"gg","event":{"type":5,"agentId":"root"}}', "type is a JSON number"),
    (b'{"type":"log","agentId":"\\ud800"}', "a lone surrogate"),
    (b'{"type":"log","agentId":"root","\\uDFFF":1}', "a lone surrogate"),
    (b'{"type":"log","agentId":"root","deep":[{"x":["\\udc00"]}]}', "a lone surrogate"),
    (json.dumps({"type": "log", "x": nested(MAX_DEPTH)}).encode(), f"nested deeper than {MAX_DEPTH}"),
    (f'{{"type":"agent_surface","agentId":"root","tools":{nested_text(950)}}}'.encode(), "nested deeper"),
    (f'{{"type":"memory_state","moduleId":"m","memories":{nested_text(5000)}}}'.encode(), "nested deeper"),
]


def page_statuses(client, run: Run) -> dict:
    """{url: status} for every page of `run`, and the runs list."""
    urls = [reverse("runs:list")] + [reverse(f"runs:{name}", args=[run.pk]) for name in RUN_PAGES]
    for agent_id in run.agents.values_list("agent_id", flat=True):
        if agent_url(run.pk, agent_id):  # an id no URL can carry: the pages show it without a link
            urls.append(agent_url(run.pk, agent_id))
    out = {}
    for url in urls:
        response = client.get(url)
        if hasattr(response, "streaming_content"):
            b"".join(response.streaming_content)  # a streamed page fails while it streams
        out[url] = response.status_code
    return out


def all_ok(statuses: dict) -> bool:
    return set(statuses.values()) == {200}


def manage(env, *args, input=None):
    """`manage.py` in a process of its own with `env` (the scale path's tests)."""
    return subprocess.run([sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True,
                          check=True, timeout=300, input=input)  # fmt: skip


def dump(env) -> dict:
    """Every run's projection rows, read by a `manage.py` on `env`'s database."""
    return json.loads(manage(env, "shell", "-c", DUMP).stdout.splitlines()[-1])


def pages(env) -> dict:
    return json.loads(manage(env, "shell", "-c", PAGES).stdout.splitlines()[-1])


def appended_reads(run, records, table: str) -> list[str]:
    """The SELECTs of `table` the write path made appending `records` to `run`, each with SQLite's
    plan: [(sql, [each step that searches or scans])]."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from runs.ingest import writer as ingest

    with CaptureQueriesContext(connection) as queries:
        ingest.append(run, records)
    reads = [q["sql"] for q in queries if q["sql"].startswith("SELECT") and f'"{table}"' in q["sql"].split("WHERE")[0]]
    with connection.cursor() as cursor:
        plans = []
        for sql in reads:
            cursor.execute("EXPLAIN QUERY PLAN " + sql)
            plans.append((sql, [s[-1] for s in cursor.fetchall() if "SEARCH" in s[-1] or "SCAN" in s[-1]]))
    return plans
