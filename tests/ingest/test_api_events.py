"""POST /api/runs/<run>/events (a process pushing a live stream) and GET ?after= (a cursor)."""

import pytest
from django.test import Client
from django.urls import reverse

from runs.models import Event, IngestToken, RejectedLine, Run
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db


@pytest.fixture
def token(viewer):
    return IngestToken.objects.create(user=viewer, label="pusher")


def url(ref):
    return reverse("runs:api_events", args=[ref])


def post(client, ref, body, key=None, **extra):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {key}"} if key else {}
    return client.post(url(ref), data=body, content_type="application/x-ndjson", **headers, **extra)


def test_post_requires_a_token():
    client = Client(enforce_csrf_checks=True)
    body = REAL_MOCK.read_bytes()
    response = post(client, "live-1", body)
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")
    assert "error" in response.json()
    assert post(client, "live-1", body, key="not-a-token").status_code == 401
    assert not Run.objects.filter(name="live-1").exists() and Event.objects.count() == 0


def test_a_logged_in_session_is_not_enough_to_post(viewer_client):
    assert post(viewer_client, "live-1", REAL_MOCK.read_bytes()).status_code == 401


def test_post_with_a_token_stores_and_returns_the_counts(token):
    client = Client(enforce_csrf_checks=True)  # CSRF-exempt: a process has no cookie
    body = REAL_MOCK.read_bytes()
    response = post(client, "live-1", body, key=token.key)
    assert response.status_code == 200
    data = response.json()
    run = Run.objects.get(name="live-1")
    assert data == {
        "run": run.pk, "name": "live-1", "created": True, "stored": 14, "rejected": 0, "duplicates": 0,
        "lines": 14, "last_seq": 14, "rejections": [],
    }  # fmt: skip
    assert run.source == Run.Source.API and run.created_by == token.user
    assert run.status == "completed" and run.turn_count == 2
    # the same body again (a retry): nothing stored twice
    again = post(client, str(run.pk), body, key=token.key).json()
    assert (again["stored"], again["duplicates"], again["created"]) == (0, 14, False)
    assert Event.objects.filter(run=run).count() == 14


def test_post_pushes_a_stream_in_pieces_and_reports_rejections(token):
    client = Client()
    lines = (STREAMS / "malformed_tail.ndjson").read_bytes().split(b"\n")
    first = post(client, "live-2", b"\n".join(lines[:3]) + b"\n", key=token.key).json()
    assert (first["stored"], first["last_seq"]) == (3, 3)
    rest = post(client, "live-2", b"\n".join(lines[3:]), key=token.key).json()
    assert (rest["stored"], rest["rejected"], rest["last_seq"]) == (3, 5, 6)
    # line numbers count from 1 in each body
    assert [r["line"] for r in rest["rejections"]] == [4, 5, 6, 7, 8]
    assert rest["rejections"][0]["reason"] == "blank line"
    run = Run.objects.get(name="live-2")
    assert RejectedLine.objects.filter(run=run).count() == 5


def test_a_push_refuses_to_create_a_run_named_dot_dot(token):
    """'..' passes the address as one part here, but a browser or curl rewrites it away: never a run name."""
    response = post(Client(), "..", REAL_MOCK.read_bytes(), key=token.key)
    assert response.status_code == 400 and "A run name cannot be '..'" in response.json()["error"]
    assert not Run.objects.exists()


def test_post_to_an_unknown_id_is_404(token):
    assert post(Client(), "999", b'{"type":"turn_started"}\n', key=token.key).status_code == 404


def test_get_requires_a_login_or_a_token(client, token):
    run, _ = import_stream(REAL_MOCK)
    assert client.get(url(run.pk)).status_code == 401
    response = client.get(url(run.pk), HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert response.status_code == 200
    assert len(b"".join(response.streaming_content).splitlines()) == 14


def test_get_after_a_cursor_returns_the_stored_lines(viewer_client):
    run, _ = import_stream(REAL_MOCK)
    raw = REAL_MOCK.read_bytes().split(b"\n")[:-1]
    response = viewer_client.get(url(run.pk), {"after": 10})
    assert response.status_code == 200
    assert response["Content-Type"].startswith("application/x-ndjson")
    assert response["X-Last-Seq"] == "14"
    assert b"".join(response.streaming_content) == b"\n".join(raw[10:]) + b"\n"
    by_name = viewer_client.get(url(run.name), {"after": 0})
    assert b"".join(by_name.streaming_content) == REAL_MOCK.read_bytes()
    empty = viewer_client.get(url(run.pk), {"after": 14})
    assert b"".join(empty.streaming_content) == b""
    assert viewer_client.get(url(run.pk), {"after": "x"}).status_code == 400
    assert viewer_client.get(url("no-such-run")).status_code == 404


def test_other_methods_are_refused(viewer_client):
    response = viewer_client.delete(url("1"))
    assert response.status_code == 405 and response["Allow"] == "GET, POST"


def test_ingest_token_command_mints_a_working_token(viewer):
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("ingest_token", "viewer", "--label", "ci", stdout=out)
    key = out.getvalue().strip()
    assert IngestToken.objects.get(key=key).user == viewer
    assert post(Client(), "via-cmd", b'{"type":"turn_started"}\n', key=key).json()["stored"] == 1


def test_under_asgi_the_stream_is_read_by_an_async_iterator():
    from asgiref.sync import async_to_sync
    from django.test import AsyncRequestFactory

    from runs.ingest.views import ndjson_response

    run, _ = import_stream(REAL_MOCK)
    response = ndjson_response(run, after=3, request=AsyncRequestFactory().get("/"))
    assert response.is_async  # Daphne streams it chunk by chunk instead of draining it into a list

    async def collect():
        return b"".join([part async for part in response.streaming_content])

    assert async_to_sync(collect)() == b"".join(REAL_MOCK.read_bytes().splitlines(keepends=True)[3:])


def test_post_to_a_name_no_run_can_hold_is_a_clear_400(token):
    response = Client().post("/api/runs/a%00b/events", data=b'{"type":"log"}\n',
                             content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert response.status_code == 400 and "NUL" in response.json()["error"]
    assert not Run.objects.exists()
