"""What the feed's browser tests share: posting stamped records to a run through the token API, a
log record, waiting for the feed indicator's state."""

import itertools
import json
import urllib.request

_clock = itertools.count()


def stamped(record):
    # gg stamps every record; identical unstamped lines would be taken for a re-sent stream.
    return {"timestamp": f"2026-08-03T00:00:00.{next(_clock):06d}Z", **record}


def ndjson(records):
    return "".join(json.dumps(stamped(r)) + "\n" for r in records)


def post(server, run, records):
    request = urllib.request.Request(
        f"{server.url}/api/runs/{run}/events", data=ndjson(records).encode(), method="POST",
        headers={"Authorization": f"Bearer {server.token}", "Content-Type": "application/x-ndjson"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.load(response)


def log(message, agent="root"):
    return {"agentId": agent, "type": "log", "level": "info", "message": message}


def wait_state(page, state, timeout=30_000):
    page.wait_for_function("s => document.getElementById('feed-state').dataset.state === s", arg=state, timeout=timeout)
