"""manage.py ingest / export / bootstrap: the way in and the way out from a shell."""

import io
import sys
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from runs.models import Event, Run
from tests.streams import REAL_MOCK, STREAM_FIXTURES, STREAMS

pytestmark = pytest.mark.django_db


def run_cmd(*args, stdin=None, monkeypatch=None):
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_ingest_prints_stored_and_rejected():
    out, err = run_cmd("ingest", str(REAL_MOCK))
    assert out == "stored 14, rejected 0\n"
    run = Run.objects.get(name="real-mock-session")
    assert run.source == Run.Source.IMPORT and run.last_seq == 14
    assert Event.objects.filter(run=run).count() == 14


def test_ingest_malformed_tail_reports_each_rejected_line():
    out, err = run_cmd("ingest", str(STREAMS / "malformed_tail.ndjson"), "--run", "tail")
    assert out == "stored 6, rejected 5\n"
    assert "line 7: blank line" in err and "line 9: not a JSON object (a JSON array)" in err
    assert "line 11: not JSON" in err


def test_ingest_again_stores_nothing_twice():
    run_cmd("ingest", str(REAL_MOCK), "--run", "twice")
    out, _ = run_cmd("ingest", str(REAL_MOCK), "--run", "twice")
    assert out == "stored 0, rejected 0 (14 already stored)\n"
    assert Event.objects.filter(run__name="twice").count() == 14


def test_ingest_from_stdin(monkeypatch):
    class FakeStdin:
        buffer = io.BytesIO(REAL_MOCK.read_bytes())

    monkeypatch.setattr(sys, "stdin", FakeStdin())
    out, _ = run_cmd("ingest", "-", "--run", "piped")
    assert out == "stored 14, rejected 0\n"
    assert Run.objects.get(name="piped").turn_count == 2


@pytest.mark.parametrize("content", [b"", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00", b"\n\n"])
def test_ingest_of_a_file_that_stores_nothing_creates_no_run(content, tmp_path):
    path = tmp_path / "picture.png"
    path.write_bytes(content)
    out, err = run_cmd("ingest", str(path), "--run", "nothing")
    assert out.startswith("stored 0")
    assert "no run created" in err
    assert not Run.objects.filter(name="nothing").exists()
    # An existing run stays, whatever the file adds to it.
    run_cmd("ingest", str(REAL_MOCK), "--run", "kept")
    run_cmd("ingest", str(path), "--run", "kept")
    assert Run.objects.filter(name="kept").exists()


def test_ingest_of_a_missing_file_is_a_clear_error():
    with pytest.raises(CommandError, match="No such file"):
        call_command("ingest", "/nonexistent/stream.ndjson")


@pytest.mark.parametrize("name", sorted(STREAM_FIXTURES))
def test_export_round_trips_byte_exactly(name, tmp_path):
    path = STREAM_FIXTURES[name]
    run_cmd("ingest", str(path), "--run", name)
    target = tmp_path / "out.ndjson"
    call_command("export", name, "--output", str(target), stderr=StringIO())
    original = path.read_bytes()
    if name == "malformed_tail":
        # the stored records, exactly; rejected lines are not records
        lines = original.split(b"\n")[:6]
        assert target.read_bytes() == b"\n".join(lines) + b"\n"
    else:
        assert target.read_bytes() == original
    # and through stdout
    out, _ = run_cmd("export", name)
    assert out.encode("utf-8") == target.read_bytes()


def test_export_of_an_unknown_run_is_a_clear_error():
    with pytest.raises(CommandError, match="No run"):
        call_command("export", "nope")


def test_bootstrap_creates_admin_and_demo_runs_once():
    out, _ = run_cmd("bootstrap")
    assert "Admin account: admin / " in out
    assert "Demo run 'real-mock-session': stored 14, rejected 0" in out
    real = Run.objects.get(name="real-mock-session")
    assert real.last_seq == 14 and real.status == "completed"
    runs = Run.objects.count()
    assert runs >= 1
    out, _ = run_cmd("bootstrap")
    # Nothing twice, and it says what it skipped and why.
    assert out.splitlines() == [
        "Admin account: skipped, one exists (its password was shown when it was created; "
        "`manage.py changepassword admin` sets a new one).",
        "Demo runs: skipped, the database already holds runs.",
    ]
    assert Run.objects.count() == runs


def test_bootstrap_says_it_skipped_gg_recording_when_shared_is_absent(monkeypatch, tmp_path):
    from runs.management.commands import bootstrap

    missing = tmp_path / "shared" / "fixtures" / "gg" / "real-mock-session.ndjson"
    monkeypatch.setattr(bootstrap, "DEMO_STREAMS", [("real-mock-session", missing)])
    monkeypatch.setattr(bootstrap, "DEMO_SPECS", [])
    out, _ = run_cmd("bootstrap")
    assert f"Skipped demo run 'real-mock-session': gg's recorded stream is not at {missing}" in out
    assert "../shared is absent beside this checkout" in out
    assert not Run.objects.filter(name="real-mock-session").exists()


def test_export_to_a_terminal_that_is_not_utf8_still_writes_the_stored_bytes():
    path = STREAM_FIXTURES["multi_agent"]
    run_cmd("ingest", str(path), "--run", "ascii-terminal")
    sink = io.BytesIO()
    out = io.TextIOWrapper(sink, encoding="ascii")  # a C-locale terminal that is not UTF-8
    call_command("export", "ascii-terminal", stdout=out)
    out.flush()
    assert sink.getvalue() == path.read_bytes()
    assert any(b > 127 for b in sink.getvalue())  # the fixture does carry non-ASCII text
