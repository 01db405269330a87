"""An operator's Delete (runs.ingest.deletion): the run is gone to every page, write and name check once
the request commits, its records go in a background thread while the runs list says so, a live engine
run stops, and a deletion a stopped server cut short is finished by the next start."""

import json
import logging
import time

import pytest
from django.contrib.auth.models import Permission
from django.db import connection, transaction
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from runs.ingest import background, deletion, writer
from runs.ingest.rebuild import rebuild_projections
from runs.launch import dispatch
from runs.models import Agent, Event, IngestToken, RejectedLine, Run, RunFacts
from tests.console_server import ConsoleServer
from tests.ingest_helpers import page_statuses
from tests.launch_helpers import SLOW_SCRIPT, form_fields
from tests.streams import STREAMS


@pytest.fixture
def deleter(django_user_model):
    user = django_user_model.objects.create_user("deleter", password="deleter-pass-123")
    user.user_permissions.add(*Permission.objects.filter(codename__in=["add_run", "delete_run"],
                                                         content_type__app_label="runs"))
    client = Client()
    client.force_login(user)
    client.user = user
    return client


def _stored(name):
    run = Run.objects.create(name=name)
    writer.append_stream(run, (STREAMS / "multi_agent.ndjson").open("rb"))
    writer.append_lines(run, ["not json"])
    run.refresh_from_db()
    return run


def _until_idle(threads=deletion._threads, timeout=30):
    deadline = time.monotonic() + timeout
    while threads.busy() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not threads.busy(), f"{threads.name} still busy after {timeout} s"


def _gone(pk):
    return not (Run.every.filter(pk=pk).exists() or Event.objects.filter(run_id=pk).exists()
                or Agent.objects.filter(run_id=pk).exists() or RejectedLine.objects.filter(run_id=pk).exists()
                or RunFacts.objects.filter(run_id=pk).exists())


@pytest.mark.django_db
def test_a_deleted_run_is_gone_to_pages_writes_and_names_before_its_records_go(deleter):
    """Before its records go (the background part is on commit, which this test's transaction never
    reaches): the run answers 404 everywhere, takes no write, holds its name with a message saying
    why, and the runs list says how much of it is left; once its records go, the name is free."""
    run, kept = _stored("doomed"), _stored("kept")
    listed = deleter.post(reverse("runs:delete", args=[run.pk]), follow=True).content.decode()
    assert f"its {run.last_seq:,} records go in the background" in listed
    assert Event.objects.filter(run_id=run.pk).count() == run.last_seq  # still stored
    assert 'data-run="doomed"' not in listed and 'data-run="kept"' in listed
    assert f'class="deleting-run" data-run="{run.pk}"' in listed
    assert f"{run.last_seq:,} of {run.last_seq:,} record" in listed and 'hx-trigger="every 2s"' in listed
    pages = page_statuses(deleter, run)
    assert {status for url, status in pages.items() if url != reverse("runs:list")} == {404}, pages
    assert deleter.post(reverse("runs:delete", args=[run.pk])).status_code == 404  # asked once
    gone_page = deleter.get(reverse("runs:timeline", args=[run.pk])).content.decode()
    assert f"Run {run.pk} was deleted; its records are going in the background." in gone_page

    with pytest.raises(writer.RunGone):
        writer.append(run, [{"type": "log", "message": "late"}])
    with pytest.raises(writer.RunGone):
        rebuild_projections(run)  # a rebuild that listed it before the request: nothing folded again
    held = "is being deleted; its name is free once it is gone"
    upload = deleter.post(reverse("runs:import"), {"file": SimpleUploadedFile("x.ndjson", b'{"type":"log"}\n'),
                                                   "name": "doomed"})
    assert held in upload.content.decode()
    fields = form_fields(deleter.get(reverse("runs:new") + "?demo=review").content)
    launched = deleter.post(reverse("runs:new"), {**fields, "name": ["doomed"]})
    assert launched.status_code == 400 and held in launched.content.decode()
    key = IngestToken.objects.create(user=deleter.user).key
    pushed = Client().post(reverse("runs:api_events", args=["doomed"]), b'{"type":"log"}\n',
                           content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {key}")
    assert pushed.status_code == 409 and held in pushed.json()["error"] and pushed["Retry-After"] == "5"

    deletion.run_delete(run)  # what the background thread does
    assert _gone(run.pk) and Event.objects.filter(run=kept).count() == kept.last_seq
    assert f"There is no run {run.pk}: it was deleted, or never was." in \
        deleter.get(reverse("runs:feed", args=[run.pk])).content.decode()
    partial = deleter.get(reverse("runs:deletions")).content.decode()
    assert "deleting-run" not in partial and "hx-trigger" not in partial  # the list stops asking
    assert deleter.post(reverse("runs:import"), {"file": SimpleUploadedFile("x.ndjson", b'{"type":"log"}\n'),
                                                 "name": "doomed"}).status_code == 200
    assert Run.objects.filter(name="doomed").exists()  # the name is free


@pytest.mark.django_db
def test_a_launched_run_s_workspace_goes_with_it(settings, tmp_path):
    settings.VAR_DIR = tmp_path
    run, kept = _stored("launched"), _stored("kept")
    for each in (run, kept):
        each.workspace_dir.mkdir(parents=True)
        (each.workspace_dir / "game.js").write_text("loop()")
    outside = tmp_path / "outside.txt"
    outside.write_text("host file")
    (run.workspace_dir / "link").symlink_to(outside)  # a model's shell can leave one
    deletion.run_delete(run)
    assert not run.workspace_dir.exists() and outside.read_text() == "host file"
    assert (kept.workspace_dir / "game.js").read_text() == "loop()"


@pytest.mark.django_db(transaction=True)  # the worker closes its connection, as a worker's thread does
def test_a_queued_run_deleted_before_a_worker_takes_it_starts_nothing(caplog, monkeypatch):
    monkeypatch.setattr(deletion._threads, "put", lambda item: None)  # the records stay while the worker looks
    run = Run.objects.create(name="queued", source=Run.Source.ENGINE, status=Run.Status.QUEUED)
    assert deletion.run_delete_later(run)
    with caplog.at_level(logging.INFO):
        dispatch.execute(run.pk)  # the worker the launch handed it to
    assert not caplog.records and not Event.objects.filter(run_id=run.pk).exists()
    assert Run.every.get(pk=run.pk).status == Run.Status.QUEUED  # untouched until its deletion takes it


@pytest.mark.django_db
def test_the_admin_leaves_deleting_runs_to_the_console(admin_client):
    """Django's admin would delete a run's every record in one request and one transaction."""
    run = _stored("in-admin")
    assert admin_client.get(reverse("admin:runs_run_delete", args=[run.pk])).status_code == 403
    assert admin_client.get(reverse("admin:runs_run_change", args=[run.pk])).status_code == 200


@pytest.mark.django_db(transaction=True)
def test_the_selection_s_delete_takes_every_record_in_the_background(deleter):
    runs, kept = [_stored("first"), _stored("second")], _stored("kept")
    done = deleter.post(reverse("runs:selected"), {"run": [r.pk for r in runs], "action": "delete", "confirm": "yes"},
                        follow=True)
    assert "Deleted 2 runs" in done.content.decode()
    _until_idle()
    assert all(_gone(r.pk) for r in runs)
    assert Event.objects.filter(run=kept).count() == kept.last_seq
    assert "deleting-run" not in deleter.get(reverse("runs:list")).content.decode()


# A server's two threads at once (the engine's run, then its deletion) on the embedded default's own
# database file: on the test database (shared-cache in-memory SQLite) a write meeting another fails at
# once instead of waiting its turn.
LIVE_RUN_DELETED = """
import json, logging, time
from runs.ingest import deletion
from runs.launch import dispatch
from runs.models import Event, Run

logged = []
class Keep(logging.Handler):
    def emit(self, record):
        logged.append((record.levelname, record.getMessage()))
logging.getLogger("runs").addHandler(Keep())
logging.getLogger("runs").setLevel(logging.INFO)
run = Run.objects.create(name="live", source=Run.Source.ENGINE, status=Run.Status.QUEUED,
                         launch_spec=json.loads({spec!r}))
run.workspace_dir.mkdir(parents=True)
dispatch.dispatch(run.pk)
while Run.objects.get(pk=run.pk).turn_count < 2:
    time.sleep(0.02)
assert deletion.run_delete_later(run)
deadline = time.monotonic() + 60
while (dispatch._threads.busy() or deletion._threads.busy()) and time.monotonic() < deadline:
    time.sleep(0.05)
print(json.dumps({{"pk": run.pk, "left": Run.every.filter(pk=run.pk).exists() or Event.objects.filter(run_id=run.pk).exists(),
                  "workspace": run.workspace_dir.exists(), "logged": logged}}))
"""


def test_a_live_engine_run_deleted_stops_and_all_of_it_goes(tmp_path):
    server = ConsoleServer(tmp_path)
    server.manage("migrate", "--noinput")
    spec = {"task": "List the workspace forever.", "provider": {"kind": "scripted", "script": SLOW_SCRIPT},
            "agents": [{"slug": "coder", "capabilities": [{"id": "list-dir", "enabled": True}]}]}
    out = json.loads(server.manage("shell", "-c", LIVE_RUN_DELETED.format(spec=json.dumps(spec))).stdout.splitlines()[-1])
    assert not out["left"] and not out["workspace"], out
    assert [m for level, m in out["logged"] if level in ("ERROR", "CRITICAL")] == [], out["logged"]
    assert ["INFO", f"run {out['pk']} stopped: deleted while it ran"] in out["logged"]


@pytest.mark.django_db(transaction=True)
def test_a_deletion_a_stopped_server_cut_short_is_finished_by_the_next_start():
    run, kept = _stored("cut-short"), _stored("kept")
    # The request committed, then the server stopped before its thread finished: half the log left.
    Run.objects.filter(pk=run.pk).update(deletion_requested_at=timezone.now())
    Event.objects.filter(run_id=run.pk, seq__gt=run.last_seq // 2).delete()
    deletion.resume_on_start()
    _until_idle()
    assert _gone(run.pk) and Event.objects.filter(run=kept).count() == kept.last_seq


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite's write lock is the whole database's; "
                    "PostgreSQL's row lock on another run does not stop this one's deletion")
@pytest.mark.django_db(transaction=True)
def test_a_deletion_that_fails_is_tried_again_by_the_same_process(monkeypatch, caplog):
    """A deletion that meets the database locked (here by this test's open write, which on the test
    database fails the deletion at once) is tried again a moment later, not left to the next start."""
    monkeypatch.setattr(deletion, "RETRY_SECONDS", (0.2,))
    run, kept = _stored("locked-out"), _stored("kept")
    Run.objects.filter(pk=run.pk).update(deletion_requested_at=timezone.now())  # what the Delete commits
    with transaction.atomic():
        Run.objects.filter(pk=kept.pk).update(session_id="held")  # the runs table, write-locked until commit
        deletion._threads.put((run.pk, 0))  # what the Delete's commit starts
        deadline = time.monotonic() + 10
        while "trying again in 0.2 s" not in caplog.text and time.monotonic() < deadline:
            time.sleep(0.02)
        assert f"deleting run {run.pk} stopped; trying again in 0.2 s" in caplog.text
    deadline = time.monotonic() + 30
    while not _gone(run.pk) and time.monotonic() < deadline:
        time.sleep(0.05)
    _until_idle()
    assert _gone(run.pk) and Event.objects.filter(run=kept).count() == kept.last_seq


@pytest.mark.django_db(transaction=True)
def test_a_deletion_that_keeps_failing_says_why_on_the_runs_list_and_goes_once_it_can(deleter, monkeypatch, caplog):
    """The database refuses the deletion (a trigger on the test database) more times than the retries'
    schedule is long: the runs list says why its last try stopped, and once the database lets it the
    same process finishes it, no restart needed."""
    monkeypatch.setattr(deletion, "RETRY_SECONDS", (0.05, 0.1))
    run, kept = _stored("refused"), _stored("kept")
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute("CREATE FUNCTION refuse_deletes() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
                           "RAISE 'the disk is refusing writes' USING ERRCODE = 'integrity_constraint_violation'; END $$")
            cursor.execute("CREATE TRIGGER refuse_deletes BEFORE DELETE ON runs_event "
                           "FOR EACH ROW EXECUTE FUNCTION refuse_deletes()")
        else:
            cursor.execute("CREATE TRIGGER refuse_deletes BEFORE DELETE ON runs_event "
                           "BEGIN SELECT RAISE(ABORT, 'the disk is refusing writes'); END")
    try:
        deleter.post(reverse("runs:delete", args=[run.pk]))
        deadline = time.monotonic() + 20
        while caplog.text.count(f"deleting run {run.pk} stopped") < 4 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert caplog.text.count(f"deleting run {run.pk} stopped") >= 4, caplog.text
        line = deleter.get(reverse("runs:deletions")).content.decode()
        assert "<b>refused</b>" in line and "its last try stopped: <span class=\"deletion-stopped\">" \
            "IntegrityError: the disk is refusing writes" in line and "and the server tries again" in line, line
    finally:
        with connection.cursor() as cursor:
            if connection.vendor == "postgresql":
                cursor.execute("DROP FUNCTION refuse_deletes CASCADE")  # and its trigger
            else:
                cursor.execute("DROP TRIGGER refuse_deletes")
    deadline = time.monotonic() + 20
    while not _gone(run.pk) and time.monotonic() < deadline:
        time.sleep(0.05)
    _until_idle()
    assert _gone(run.pk) and Event.objects.filter(run=kept).count() == kept.last_seq


def test_a_starting_process_leaves_a_deletion_another_holds_alone(local_redis):
    """Redis path: the process deleting a run holds its lease; one starting meanwhile resumes only
    the deletions nobody holds."""
    held, free = 10**9 + 1, 10**9 + 2  # ids no run of another test has
    with background.lease(deletion.LEASE_KEY.format(held)):
        assert background.unleased([held, free], deletion.LEASE_KEY) == [free]
    assert background.unleased([held, free], deletion.LEASE_KEY) == [held, free]
