"""Ingest tokens scoped to named runs (issue 19 item 6): a token with run names writes only into
those runs — the API answers 403 naming the run for any other — and still only into runs its user
may write (the names narrow a token, never widen it). The admin and `manage.py ingest_token --run`
set the names."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client

from runs.models import Event, IngestToken, Run

pytestmark = pytest.mark.django_db

def post(ref, key, message="hi"):
    line = b'{"type":"log","agentId":"root","message":"%s"}\n' % message.encode()
    return Client().post(f"/api/runs/{ref}/events", line, content_type="application/x-ndjson",
                         HTTP_AUTHORIZATION=f"Bearer {key}")


def test_a_scoped_token_writes_only_into_its_named_runs(viewer, django_user_model):
    token = IngestToken.objects.create(user=viewer, run_names="ci-nightly\n  ci-weekly  \n\n")
    assert token.scope() == ["ci-nightly", "ci-weekly"]
    first = post("ci-nightly", token.key)
    assert first.status_code == 200 and first.json()["created"] and first.json()["stored"] == 1
    assert post(first.json()["run"], token.key, "again").json()["stored"] == 1  # by pk too
    refused = post("elsewhere", token.key)
    assert refused.status_code == 403
    assert "'elsewhere'" in refused.json()["error"] and "'ci-nightly'" in refused.json()["error"]
    assert not Run.objects.filter(name="elsewhere").exists()
    # a run of its own user outside the scope, by name and by pk: refused, nothing stored
    own = Run.objects.create(name="own-run", source="api", created_by=viewer)
    for ref in ("own-run", own.pk):
        response = post(ref, token.key)
        assert response.status_code == 403 and "'own-run'" in response.json()["error"]
    assert not Event.objects.filter(run=own).exists()
    # the names narrow the token: a named run another user created stays theirs
    other = django_user_model.objects.create_user("other", password="pw")
    Run.objects.create(name="ci-weekly", source="api", created_by=other)
    response = post("ci-weekly", token.key)
    assert response.status_code == 403 and "belongs to another user" in response.json()["error"]


def test_an_unscoped_token_keeps_the_rule_of_runs_its_user_created(viewer):
    token = IngestToken.objects.create(user=viewer)
    assert token.scope() == []
    assert post("anything", token.key).status_code == 200
    assert post("anything-else", token.key).status_code == 200


def test_the_command_sets_the_scope(viewer):
    out = StringIO()
    call_command("ingest_token", "viewer", "--run", "a", "--run", " b ", "--run", "a", stdout=out)
    token = IngestToken.objects.get(key=out.getvalue().strip())
    assert token.scope() == ["a", "b"]
    assert post("b", token.key).status_code == 200 and post("c", token.key).status_code == 403
    with pytest.raises(CommandError, match="--run"):
        call_command("ingest_token", "viewer", "--run", "x" * 201, stdout=StringIO())


def test_the_admin_sets_the_scope(client, django_user_model, viewer):
    admin = django_user_model.objects.create_superuser("root", password="pw")
    client.force_login(admin)
    response = client.post("/admin/runs/ingesttoken/add/",
                           {"user": viewer.pk, "label": "ci", "run_names": "ci-nightly\nci-weekly"})
    assert response.status_code == 302, response.content.decode()[:2000]
    token = IngestToken.objects.get(label="ci")
    assert token.scope() == ["ci-nightly", "ci-weekly"]
    listing = client.get("/admin/runs/ingesttoken/").content.decode()
    assert "ci-nightly, ci-weekly" in listing


def test_the_admin_refuses_a_name_no_run_can_have(client, django_user_model, viewer):
    client.force_login(django_user_model.objects.create_superuser("root", password="pw"))
    response = client.post("/admin/runs/ingesttoken/add/",
                           {"user": viewer.pk, "label": "long", "run_names": "fine\n" + "x" * 201})
    assert response.status_code == 200  # the form again, with the error
    assert "Line 2: A run name has at most 200 characters" in response.content.decode()
    assert not IngestToken.objects.filter(label="long").exists()
