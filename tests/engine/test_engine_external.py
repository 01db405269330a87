"""External gg: a stand-in executable prints a recorded stream with delays; every line lands
through ingest, stderr is kept as warnings, and the stream's session_ended decides the status."""

import json
import stat
import sys

import pytest

from tests.paths import GG_FIXTURES
from tests.engine_helpers import run_spec

STAND_IN = """#!{python}
import json, sys, time
args = sys.argv[1:]
assert args[0] == "--config", args
config = json.load(open(args[1]))
assert config["capabilitySet"]["agents"][0]["slug"] == "coder" and config["prompt"] == "Make a game."
print("stand-in gg starting", file=sys.stderr, flush=True)
for line in open({stream!r}):
    sys.stdout.write(line)
    sys.stdout.flush()
    time.sleep(0.01)
print("not json at all", flush=True)
"""


@pytest.mark.django_db(transaction=True)
def test_a_run_executed_by_gg_is_tailed_into_ingest(tmp_path, monkeypatch):
    stream = GG_FIXTURES / "real-mock-session.ndjson"
    binary = tmp_path / "gg"
    binary.write_text(STAND_IN.format(python=sys.executable, stream=str(stream)))
    binary.chmod(binary.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("GG_BINARY", str(binary))
    data = {"task": "Make a game.", "engine": "gg",
            "agents": [{"slug": "coder", "name": "Coder", "capabilities": [{"id": "write-file", "enabled": True}]}],
            "provider": {"kind": "scripted", "script": {}}}
    run, records = run_spec(data, tmp_path)
    recorded = [json.loads(line) for line in stream.read_text().splitlines()]
    assert records[: len(recorded)] == recorded  # verbatim, in order
    assert records[-1]["type"] == "log" and records[-1]["level"] == "warn"
    assert "stand-in gg starting" in records[-1]["message"]
    assert run.status == "completed" and run.source == "gg"
    assert run.rejected_lines.get().reason  # the non-JSON line is kept, not dropped
    invocation = json.loads((tmp_path / "ws" / ".gg" / "invocation.json").read_text())
    assert invocation["cancelFile"].endswith(".gg/cancel") and invocation["sessionId"] == run.session_id


def test_engine_gg_needs_gg_binary(monkeypatch):
    from runs.engine.validation import validate_spec

    monkeypatch.delenv("GG_BINARY", raising=False)
    _, errors = validate_spec({"task": "t", "engine": "gg", "agents": [{"slug": "a"}],
                               "provider": {"kind": "scripted", "script": {}}})
    assert errors == [{"path": "engine", "message": "engine 'gg' needs GG_BINARY set to the gg executable"}]
