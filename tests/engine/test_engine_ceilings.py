"""Ceilings and cancel: each stops the run with gg's status and, for a ceiling, a limit_exceeded."""

import pytest
from django.db import OperationalError

from runs.engine.loop import Engine
from runs.engine.validation import validate_spec
from runs.engine.telemetry import Telemetry
from runs.ingest import writer
from runs.models import Run
from tests.engine_helpers import call, of_type, run_spec, schema_errors, spec, tool_agent

pytestmark = pytest.mark.django_db

FILES = [{"id": "list-dir", "enabled": True}]


def busy(replies, **limits):
    return spec([tool_agent("coder", FILES)], {"coder": replies}, limits=limits)


def test_max_turns_exhausts(tmp_path):
    run, records = run_spec(busy([call("list_dir")] * 5, maxTurns=3), tmp_path)
    assert run.status == "exhausted" and schema_errors(records) == []
    assert len(of_type(records, "turn_started")) == 3
    breach = of_type(records, "limit_exceeded")[0]["breach"]
    assert breach == {"limit": "turns", "threshold": 3, "observed": 3, "turns": 3, "agentId": "root"}
    assert of_type(records, "session_summary")[0]["summary"]["limitHit"]["limit"] == "turns"
    assert of_type(records, "session_ended")[0]["status"] == "exhausted"


def test_max_runtime_times_out(tmp_path):
    run, records = run_spec(busy([{"delayMs": 1100, **call("list_dir")}] + [call("list_dir")] * 3,
                                 maxRuntimeSecs=1), tmp_path)
    assert run.status == "timed_out" and schema_errors(records) == []
    assert len(of_type(records, "turn_started")) == 1
    assert of_type(records, "limit_exceeded")[0]["breach"]["limit"] == "runtime"


def test_consecutive_errors_exceed_the_limit(tmp_path):
    run, records = run_spec(busy([{"text": "prose"}] * 4, maxConsecutiveErrors=2), tmp_path)
    assert run.status == "limit_exceeded" and schema_errors(records) == []
    assert [o["consecutiveErrors"] for o in of_type(records, "turn_outcome")] == [1, 2]
    breach = of_type(records, "limit_exceeded")[0]["breach"]
    assert breach["limit"] == "consecutive_errors" and breach["observed"] == 2


def test_error_rate_over_its_window(tmp_path):
    replies = [{"text": "prose"}, call("list_dir"), {"text": "prose"}, call("list_dir")] * 2
    run, records = run_spec(busy(replies, maxErrorRate=0.4, errorRateWindow=4, maxConsecutiveErrors=3), tmp_path)
    assert run.status == "limit_exceeded" and schema_errors(records) == []
    breach = of_type(records, "limit_exceeded")[0]["breach"]
    assert breach["limit"] == "error_rate" and breach["observed"] == 0.5 and breach["window"] == 4
    assert len(of_type(records, "turn_started")) == 4


def test_cancel_is_checked_at_turn_boundaries(tmp_path):
    spec_, _ = validate_spec(busy([call("list_dir")] * 5))
    checks = []

    def should_cancel():
        checks.append(1)
        return len(checks) > 2

    telemetry = Telemetry(None, "s", sink=lambda records: None)
    status = Engine(spec_, telemetry, tmp_path / "ws", should_cancel).run()
    assert status == "canceled"
    assert len(of_type(telemetry.emitted, "turn_started")) == 2
    assert telemetry.emitted[-1] == {**telemetry.emitted[-1], "type": "session_ended", "status": "canceled"}
    assert schema_errors(telemetry.emitted) == []


def test_runner_reads_the_cancel_flag_from_the_database(tmp_path):
    from runs.engine.runner import start_run

    run = Run.objects.create(name="c", source=Run.Source.ENGINE, status=Run.Status.QUEUED,
                             launch_spec=busy([call("list_dir")] * 3), cancel_requested=True)
    assert start_run(run, workspace=tmp_path / "ws") == "canceled"
    run.refresh_from_db()
    assert run.status == "canceled" and run.events.filter(type="session_ended").count() == 1


def test_a_spent_script_ends_with_model_error(tmp_path):
    run, records = run_spec(busy([call("list_dir")]), tmp_path)
    assert run.status == "model_error"
    assert of_type(records, "turn_outcome")[-1]["errorType"] == "model_retry_exhausted"


def test_a_flush_that_fails_keeps_its_records_and_the_next_stores_each_once():
    """The database refusing a write (locked past its timeout while a big run is deleted, restarting)
    must not cost the run what it had buffered: the next flush stores it, and nothing twice. A flush
    from `emit` (a full chunk) does not raise: its records wait for the next."""
    run = Run.objects.create(name="kept")
    refusals = iter([False, True, True])  # the second and third writes fail

    def sink(records):
        if next(refusals, False):
            raise OperationalError("database is locked")
        writer.append(run, records)

    telemetry = Telemetry(run, "s", sink=sink)
    telemetry.flush_secs = 3600  # only a full chunk flushes from emit here, whatever the machine's speed
    for n in range(2 * writer.CHUNK_LINES + 5):
        telemetry.emit("log", message=f"line {n}")  # the first chunk is stored, the second's write fails
    run.refresh_from_db()
    assert run.last_seq == writer.CHUNK_LINES and len(telemetry.buffer) == writer.CHUNK_LINES + 5
    with pytest.raises(OperationalError):
        telemetry.flush()
    assert len(telemetry.buffer) == writer.CHUNK_LINES + 5
    telemetry.flush()
    run.refresh_from_db()
    messages = [e.raw for e in run.events.order_by("seq")]
    assert run.last_seq == len(messages) == 2 * writer.CHUNK_LINES + 5 and not telemetry.buffer
    assert [f"line {n}" in raw for n, raw in enumerate(messages)] == [True] * len(messages)
