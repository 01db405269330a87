"""Helpers for the engine tests: writing a spec (profiles, scripted replies, programs), running it
on the built-in engine through the real ingest path, validating the emitted records against gg's
telemetry schema, and reading them back (by type, inside a call's bracket); a real local HTTP
endpoint for the provider tests."""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from tests.gg_schema import validator


def schema_errors(records):
    """Every record that does not validate: [(index, type, message)]."""
    out = []
    for i, record in enumerate(records):
        for error in validator().iter_errors(record):
            out.append((i, record.get("type"), error.message[:300]))
    return out


def run_spec(data, tmp_path, *, name="engine-test"):
    """Create a queued engine run for `data`, execute it, and return (run, records as stored)."""
    from runs.engine.runner import start_run
    from runs.models import Run

    run = Run.objects.create(name=name, source=Run.Source.ENGINE, status=Run.Status.QUEUED, launch_spec=data)
    start_run(run, workspace=tmp_path / "ws")
    run.refresh_from_db()
    return run, [json.loads(e.raw) for e in run.events.order_by("seq")]


def of_type(records, type_, agent=None):
    return [r for r in records if r["type"] == type_ and (agent is None or r.get("agentId") == agent)]


SUBAGENTS = {"id": "subagents", "enabled": True, "params": {"maxDepth": 2}}


def spec(agents, script, **extra):
    data = {"task": "Do the thing.", "agents": agents, "provider": {"kind": "scripted", "script": script}}
    data.update(extra)
    return data


def tool_agent(slug, caps=(), **fields):
    return {"slug": slug, "name": slug.title(), "executionMode": "tool_calling", "capabilities": list(caps), **fields}


def call(tool, **args):
    return {"toolCalls": [{"name": tool, "args": args}]}


def code_agent(slug, caps=(), operations=(), **fields):
    return {"slug": slug, "name": slug.title(), "executionMode": "responses_as_code", "programLanguage": "python",
            "capabilities": list(caps), "operations": list(operations), **fields}


def program(source):
    return {"program": "import gg\n" + source}


def bracket(records, agent, open_type, close_type, operation=None):
    """The records between `agent`'s open_type and the close_type that answers it (the call named
    `operation` when given)."""
    def matches(r, type_):
        return r["type"] == type_ and r.get("agentId") == agent and (
            operation is None or r.get("operation", r.get("name")) == operation)

    start = next(i for i, r in enumerate(records) if matches(r, open_type))
    end = next(i for i, r in enumerate(records) if i > start and matches(r, close_type))
    return records[start + 1:end], records[end]


class LocalPost:
    """A real HTTP server on 127.0.0.1 handing every POST's handler to `answer`; `url` ends in `path`."""

    def __init__(self, answer, path=""):
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802
                answer(self)

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}{path}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()
