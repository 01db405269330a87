"""Validate records against gg's published telemetry schema (read from ../shared/fixtures/gg).

The telemetry schema refers to its sibling schemas by URL; each is loaded from the same folder
into a referencing.Registry under its own $id, so validation never touches the network.

    from tests.gg_schema import validate_record
    validate_record({"type": "api_call", "operation": "files.read_file", "timestamp": "..."})
"""

import json
from functools import lru_cache
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from tests.paths import GG_FIXTURES

ENVELOPE = {"timestamp": "2026-01-01T00:00:00.000000000Z", "sessionId": "run-test", "agentId": "root"}


@lru_cache(maxsize=1)
def validator():
    resources = []
    for path in sorted(GG_FIXTURES.glob("*.schema.json")):
        schema = json.loads(path.read_text())
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry = Registry().with_resources(resources)
    telemetry = json.loads((GG_FIXTURES / "telemetry-event.schema.json").read_text())
    return Draft202012Validator(telemetry, registry=registry)


def validate_record(record, *, envelope=True):
    """Raise AssertionError naming every violation; `envelope` adds a timestamp etc. when missing."""
    if envelope:
        record = {**ENVELOPE, **record}
    errors = sorted(validator().iter_errors(record), key=lambda e: list(e.absolute_path))
    if errors:
        detail = "\n".join(f"  at {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message[:300]}" for e in errors)
        raise AssertionError(f"{record.get('type')!r} record does not validate against gg's schema:\n{detail}\n"
                             f"record: {json.dumps(record)[:500]}")
