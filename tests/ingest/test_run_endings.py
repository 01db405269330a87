"""How runs end outside their stream: deleting a run takes everything stored for it, an upload that
stored nothing leaves no run, an operator can mark a stream that never ended as ended, and the
interrupted-run sweep says why."""

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from runs.feed import search
from runs.ingest import deletion, services, writer
from runs.ingest.writer import append
from runs.launch.dispatch import INTERRUPTED_REASON, sweep_interrupted
from runs.models import Agent, Event, Holding, ModuleStore, RejectedLine, Run
from tests.streams import STREAMS

pytestmark = pytest.mark.django_db

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"


def _search(run, words):
    return sorted(search.matching_seqs(run.pk, words))


def test_run_delete_takes_events_projections_and_index_and_leaves_other_runs(operator):
    keep = Run.objects.create(name="keep")
    gone = Run.objects.create(name="gone")
    for run in (keep, gone):
        writer.append_stream(run, (STREAMS / "multi_agent.ndjson").open("rb"))
        writer.append_lines(run, ["not json", '{"type":"log","message":"needle here"}'])
    assert Agent.objects.filter(run=gone).exists() and Holding.objects.filter(agent__run=gone).exists()
    assert _search(gone, "needle") == [gone.last_seq]

    counts = deletion.run_delete(gone)

    assert counts["events"] == keep.last_seq and counts["agents"] == Agent.objects.filter(run=keep).count()
    assert not Run.objects.filter(pk=gone.pk).exists()
    for model in (Event, RejectedLine, Agent, ModuleStore):
        assert not model.objects.filter(run_id=gone.pk).exists(), model
    assert not Holding.objects.filter(agent__run_id=gone.pk).exists()
    assert _search(gone, "needle") == []
    # The other run keeps everything, its index included.
    assert Event.objects.filter(run=keep).count() == keep.last_seq
    assert _search(keep, "needle") == [keep.last_seq]


def test_delete_needs_the_permission_and_a_confirmation(client, operator, django_user_model):
    from django.contrib.auth.models import Permission

    run = Run.objects.create(name="to-delete")
    append(run, [{"type": "log", "message": "x"}])
    url = reverse("runs:delete", args=[run.pk])
    client.force_login(operator)  # may launch, may not delete
    assert client.get(url).status_code == 403
    assert client.post(url).status_code == 403
    operator.user_permissions.add(Permission.objects.get(codename="delete_run", content_type__app_label="runs"))
    operator = django_user_model.objects.get(pk=operator.pk)
    client.force_login(operator)
    page = client.get(url).content.decode()
    assert "to-delete" in page and "1 record" in page and 'id="confirm-delete"' in page
    assert Run.objects.filter(pk=run.pk).exists()  # looking is not deleting
    response = client.post(url)
    assert response.status_code == 302 and response["Location"] == reverse("runs:list")
    assert not Run.objects.filter(pk=run.pk).exists()
    assert client.post(url).status_code == 404


@pytest.mark.parametrize("body", [PNG, b"\n\n", b"   "])
def test_an_upload_that_stores_nothing_creates_no_run(operator_client, body):
    upload = SimpleUploadedFile("picture.png", body)
    html = operator_client.post(reverse("runs:import"), {"file": upload, "name": ""}).content.decode()
    assert 'id="result-no-run"' in html and "stored 0" in html
    assert not Run.objects.filter(name="picture").exists()


def test_an_empty_upload_is_refused_by_the_form_and_creates_no_run(operator_client):
    html = operator_client.post(reverse("runs:import"),
                                {"file": SimpleUploadedFile("e.ndjson", b""), "name": ""}).content.decode()
    assert "The submitted file is empty." in html
    assert not Run.objects.exists()


def test_an_upload_of_nothing_into_an_existing_run_keeps_it(operator_client):
    run = Run.objects.create(name="existing")
    operator_client.post(reverse("runs:import"), {"file": SimpleUploadedFile("x.png", PNG), "name": "existing"})
    assert Run.objects.filter(pk=run.pk).exists()


def test_mark_ended_ends_an_imported_stream_once(operator):
    run = Run.objects.create(name="pushed", source=Run.Source.API)
    append(run, [{"type": "session_started"}])
    assert services.run_mark_ended(run, by="operator")
    run.refresh_from_db()
    assert (run.status, run.end_reason) == ("interrupted", "marked ended by operator")
    assert not services.run_mark_ended(run, by="operator")


def test_marking_a_run_ended_asks_first(operator_client):
    """One click ended anyone's live stream, where Cancel and Delete asked first."""
    run = Run.objects.create(name="pushed", source=Run.Source.API)
    append(run, [{"type": "session_started"}])
    url = reverse("runs:mark_ended", args=[run.pk])
    asked = operator_client.post(url, {"next": f"/runs/{run.pk}/agents/"}).content.decode()
    run.refresh_from_db()
    assert run.status == "running" and "Mark pushed ended?" in asked and 'name="confirm" value="yes"' in asked
    done = operator_client.post(url, {"confirm": "yes", "next": f"/runs/{run.pk}/agents/"})
    run.refresh_from_db()
    assert done["Location"] == f"/runs/{run.pk}/agents/" and run.status == "interrupted"
    assert append(run, [{"type": "log", "level": "info", "message": "late"}]).stored == 1  # as the page says


def test_the_sweep_says_why_a_run_was_interrupted():
    run = Run.objects.create(name="engine", source=Run.Source.ENGINE, status="running")
    on_gg = Run.objects.create(name="gg", source=Run.Source.GG, status="queued")  # the gg binary's run too
    imported = Run.objects.create(name="imported", status="running")
    assert sweep_interrupted() == 2
    for swept in (run, on_gg, imported):
        swept.refresh_from_db()
    assert (run.status, run.end_reason) == ("interrupted", INTERRUPTED_REASON)
    assert (on_gg.status, on_gg.end_reason) == ("interrupted", INTERRUPTED_REASON)
    assert (imported.status, imported.end_reason) == ("running", "")


def test_a_long_log_is_deleted_a_batch_per_transaction_and_all_of_it_goes(operator):
    """Other writers wait a batch at a time, not for the whole deletion: each batch its own atomic block
    (a savepoint inside the test's transaction), from the end of the log, the rest in one more."""
    run = Run.objects.create(name="long")
    writer.append_stream(run, (STREAMS / "multi_agent.ndjson").open("rb"))
    writer.append(run, [{"type": "log", "message": f"needle {n}"} for n in range(40)])
    run.refresh_from_db()
    with CaptureQueriesContext(connection) as captured:
        counts = deletion.run_delete(run, batch=10)
    blocks = [q["sql"] for q in captured if q["sql"].startswith("SAVEPOINT")]
    assert len(blocks) == -(-run.last_seq // 10)  # one a batch of ten, the last (at most ten) with the rest
    assert counts["events"] == run.last_seq and not Run.objects.filter(pk=run.pk).exists()
    assert not Event.objects.filter(run_id=run.pk).exists() and _search(run, "needle") == []


@pytest.mark.parametrize("slow, expected", [(True, [8, 4, 2, 1, 1]), (False, [8, 16, 16, 16])])
def test_a_deletions_batches_shrink_when_one_holds_the_lock_long_and_grow_when_quick(monkeypatch, slow, expected):
    """Records are up to a MiB each: a batch is sized by how long the last one took, not by count alone."""
    run = Run.objects.create(name="sized")
    writer.append(run, [{"type": "log", "message": f"m {n}"} for n in range(60)])
    monkeypatch.setattr(deletion, "FIRST_BATCH", 8)
    monkeypatch.setattr(deletion, "BATCH_SECONDS", -1 if slow else 3600)
    with CaptureQueriesContext(connection) as captured:
        deletion.run_delete(run, batch=16)
    tops = [60] + [int(m.group(1)) for q in captured
                   if (m := re.search(r'DELETE FROM "runs_event" WHERE \("runs_event"\."run_id" = \d+ AND '
                                      r'"runs_event"\."seq" > (\d+)\)', q["sql"]))]
    sizes = [a - b for a, b in zip(tops, tops[1:])]
    assert sizes[:len(expected)] == expected and not Event.objects.filter(run_id=run.pk).exists()
