"""Helpers for the engine tests: validating emitted records against gg's telemetry schema, and
running a spec on the built-in engine through the real ingest path."""

import json
from functools import lru_cache

import jsonschema
from referencing import Registry, Resource

from tests.conftest import GG_FIXTURES


@lru_cache(maxsize=1)
def _validator():
    resources = []
    for name in ("telemetry-event", "capability-set", "session-summary", "run-record", "session-record"):
        schema = json.loads((GG_FIXTURES / f"{name}.schema.json").read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    main = json.loads((GG_FIXTURES / "telemetry-event.schema.json").read_text())
    return jsonschema.Draft202012Validator(main, registry=registry)


def schema_errors(records):
    """Every record that does not validate: [(index, type, message)]."""
    out = []
    for i, record in enumerate(records):
        for error in _validator().iter_errors(record):
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
