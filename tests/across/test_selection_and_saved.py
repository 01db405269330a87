"""The list's selection (compare, export, delete with permission and confirmation) and saved views."""

import asyncio
import inspect
import io
import threading
import time
import zipfile

import pytest
from asgiref.sync import async_to_sync
from django.contrib.auth.models import Permission
from django.test import AsyncRequestFactory
from django.urls import reverse

from runs.ingest import stored
from runs.models import Run, SavedView
from tests.pages_helpers import rows
from tests.streams import REAL_MOCK, STREAMS, import_stream

pytestmark = pytest.mark.django_db


@pytest.fixture
def two():
    return import_stream(REAL_MOCK, "first")[0], import_stream(STREAMS / "multi_agent.ndjson", "second")[0]


def test_select_two_to_compare_the_older_as_a(viewer_client, two):
    a, b = two
    response = viewer_client.post(reverse("runs:selected"), {"run": [b.pk, a.pk], "action": "compare"})
    assert response.status_code == 302 and response["Location"] == reverse("runs:compare") + f"?a={a.pk}&b={b.pk}"
    one = viewer_client.post(reverse("runs:selected"), {"run": [a.pk], "action": "compare", "back": "q=x"}, follow=True)
    assert "Select exactly two runs" in one.content.decode() and one.redirect_chain[-1][0] == "/?q=x"


def test_export_is_a_zip_of_each_stream_verbatim(viewer_client, two):
    a, b = two
    response = viewer_client.post(reverse("runs:selected"), {"run": [a.pk, b.pk], "action": "export"})
    assert response["Content-Type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(b"".join(response.streaming_content)))
    assert sorted(archive.namelist()) == ["first.ndjson", "second.ndjson"]
    assert archive.read("first.ndjson") == REAL_MOCK.read_bytes()


def test_under_asgi_the_export_streams_as_it_is_compressed(two):
    """Daphne drains a synchronous body into a list before sending any of it (and the archive was
    spooled whole before that): the zip is an async body whose first bytes leave with the first
    member's, and two runs of one slug get a member each."""
    a, b = two
    twin = import_stream(REAL_MOCK, "First")[0]  # slugifies as "first" too
    body = stored.response_body(stored.zip_chunks([a, b, twin]), AsyncRequestFactory().post("/"))
    assert inspect.isasyncgen(body)

    async def collect():
        return [part async for part in body]

    parts = async_to_sync(collect)()
    assert len(parts) > 1 and parts[0].startswith(b"PK\x03\x04")  # a member's header before the archive's end
    archive = zipfile.ZipFile(io.BytesIO(b"".join(parts)))
    assert archive.testzip() is None
    assert set(archive.namelist()) == {"first.ndjson", f"first-{twin.pk}.ndjson", "second.ndjson"}
    assert archive.read(f"first-{twin.pk}.ndjson") == archive.read("first.ndjson") == REAL_MOCK.read_bytes()


def test_a_download_cut_short_mid_chunk_closes_its_stream_once_the_chunk_is_read():
    """A client gone while a chunk was being read on its thread: closing the generator from the event
    loop then raised "generator already executing" (a traceback per download cut short)."""
    closed = threading.Event()

    def chunks():
        try:
            yield b"first"
            time.sleep(0.5)  # the chunk being read when the client goes
            yield b"second"
        finally:
            closed.set()

    async def cut_short():
        body = stored.response_body(chunks(), AsyncRequestFactory().get("/"))
        assert await body.__anext__() == b"first"
        reading = asyncio.ensure_future(body.__anext__())
        await asyncio.sleep(0.1)
        reading.cancel()
        with pytest.raises(asyncio.CancelledError):
            await reading

    async_to_sync(cut_short)()
    assert closed.is_set()


def test_delete_needs_the_permission_then_a_confirmation(viewer_client, viewer, two):
    a, b = two
    assert viewer_client.post(reverse("runs:selected"), {"run": [a.pk], "action": "delete"}).status_code == 403
    assert Run.objects.count() == 2
    viewer.user_permissions.add(Permission.objects.get(codename="delete_run", content_type__app_label="runs"))
    confirm = viewer_client.post(reverse("runs:selected"), {"run": [a.pk, b.pk], "action": "delete"})
    assert confirm.status_code == 200 and {k for k, _ in rows(confirm.content, "data-run")} == {"first", "second"}
    assert Run.objects.count() == 2  # nothing gone before the confirmation
    done = viewer_client.post(reverse("runs:selected"), {"run": [a.pk, b.pk], "action": "delete", "confirm": "yes"},
                              follow=True)
    assert "Deleted 2 runs" in done.content.decode()
    # Gone to every page at once; their records go in the background (tests/ingest/test_run_deletion.py).
    assert not Run.objects.exists() and Run.every.count() == 2


def test_the_delete_button_shows_only_with_the_permission(viewer_client, viewer, two):
    assert 'value="delete"' not in viewer_client.get(reverse("runs:list")).content.decode()
    viewer.user_permissions.add(Permission.objects.get(codename="delete_run", content_type__app_label="runs"))
    assert 'value="delete"' in viewer_client.get(reverse("runs:list")).content.decode()


@pytest.mark.parametrize("kind, page", [("list", "runs:list"), ("compare", "runs:compare"),
                                        ("analysis", "runs:analysis")])
def test_a_saved_view_is_its_query_opened_by_url(operator_client, kind, page, two):
    a, b = two
    query = {"list": "language=python&sort=-cost&after=abc", "compare": f"a={a.pk}&b={b.pk}",
             "analysis": "group=language&source=import&format=csv"}[kind]
    response = operator_client.post(reverse("runs:view_save"), {"name": "Python by cost", "kind": kind, "query": query})
    view = SavedView.objects.get()
    # A page position and a download format are not part of a view.
    assert "after" not in view.query and "format" not in view.query
    assert response["Location"] == reverse(page) + "?" + view.query
    opened = operator_client.get(reverse("runs:view", args=[view.pk]))
    assert opened.status_code == 302 and opened["Location"] == response["Location"]
    assert operator_client.get(opened["Location"]).status_code == 200
    assert "Python by cost" in operator_client.get(reverse(page) + "?" + view.query).content.decode()
    # Saving again under the name replaces the view.
    operator_client.post(reverse("runs:view_save"), {"name": "Python by cost", "kind": kind, "query": "q=x"})
    assert SavedView.objects.get().query == "q=x"


def test_saving_a_view_needs_a_name_and_the_permission(viewer_client):
    assert viewer_client.post(reverse("runs:view_save"), {"name": "v", "kind": "list", "query": ""}).status_code == 403


def test_a_saved_view_needs_a_name_and_a_known_kind(operator_client):
    nameless = operator_client.post(reverse("runs:view_save"), {"name": " ", "kind": "list", "query": "q=x"}, follow=True)
    assert "needs a name" in nameless.content.decode() and not SavedView.objects.exists()
    operator_client.post(reverse("runs:view_save"), {"name": "v", "kind": "nope", "query": ""})
    assert not SavedView.objects.exists()


def test_a_query_too_long_to_save_says_so_on_its_page(operator_client):
    """The answer was a redirect of 100,000 characters: a 400 under the message saying why."""
    form = {"name": "v", "kind": "list", "query": "?q=" + "a" * 100_000}
    answer = operator_client.post(reverse("runs:view_save"), form, follow=True)
    assert answer.status_code == 200 and answer.redirect_chain == [(reverse("runs:list"), 302)]
    assert "too long to save" in answer.content.decode() and not SavedView.objects.exists()


def test_a_saved_view_is_deleted_after_a_confirmation_from_its_pages_strip(operator_client):
    operator_client.post(reverse("runs:view_save"), {"name": "Python", "kind": "list", "query": "language=python"})
    view = SavedView.objects.get()
    strip = operator_client.get(reverse("runs:list")).content.decode()
    assert reverse("runs:view_delete", args=[view.pk]) in strip
    back = reverse("runs:list") + "?status=failed"
    asked = operator_client.post(reverse("runs:view_delete", args=[view.pk]), {"next": back})
    assert asked.status_code == 200 and "Delete the saved view &#x27;Python&#x27;?" in asked.content.decode()
    assert SavedView.objects.exists()
    done = operator_client.post(reverse("runs:view_delete", args=[view.pk]), {"next": back, "confirm": "yes"})
    assert done.status_code == 302 and done["Location"] == back and not SavedView.objects.exists()
    assert operator_client.post(reverse("runs:view_delete", args=[view.pk]), {"confirm": "yes"}).status_code == 404


def test_deleting_a_view_needs_the_permission(operator_client, viewer, client):
    operator_client.post(reverse("runs:view_save"), {"name": "Python", "kind": "list", "query": "language=python"})
    view = SavedView.objects.get()
    client.force_login(viewer)
    assert reverse("runs:view_delete", args=[view.pk]) not in client.get(reverse("runs:list")).content.decode()
    refused = client.post(reverse("runs:view_delete", args=[view.pk]), {"confirm": "yes"})
    assert refused.status_code == 403 and b"needs the runs.add_run permission" in refused.content
    assert SavedView.objects.exists()


def test_another_users_saved_view_is_not_replaced(operator_client, django_user_model):
    other = django_user_model.objects.create_user("other", password="other-pass-123")
    SavedView.objects.create(name="Python", kind="list", query="language=python", created_by=other)
    refused = operator_client.post(reverse("runs:view_save"), {"name": "Python", "kind": "list", "query": "q=x"},
                                   follow=True)
    assert ("is other&#x27;s: deleting or replacing another&#x27;s saved view needs the runs.delete_savedview "
            "permission. Save yours under another name.") in refused.content.decode()
    assert SavedView.objects.get().query == "language=python"
    operator_client.post(reverse("runs:view_save"), {"name": "Python", "kind": "compare", "query": "a=1&b=2"})
    assert SavedView.objects.count() == 2  # the name is per kind


def test_another_users_saved_view_is_deleted_only_with_the_delete_permission(operator_client, operator,
                                                                             django_user_model):
    """Anyone who could save a view could delete everyone's; saving over another's was already refused."""
    other = django_user_model.objects.create_user("other", password="other-pass-123")
    theirs = SavedView.objects.create(name="Theirs", kind="list", query="q=a", created_by=other)
    nobodys = SavedView.objects.create(name="Nobody's", kind="list", query="q=b", created_by=None)
    strip = operator_client.get(reverse("runs:list")).content.decode()
    assert reverse("runs:view_delete", args=[theirs.pk]) not in strip
    assert reverse("runs:view_delete", args=[nobodys.pk]) in strip
    refused = operator_client.post(reverse("runs:view_delete", args=[theirs.pk]), {"confirm": "yes"})
    assert refused.status_code == 403 and b"needs the runs.delete_savedview permission" in refused.content
    assert operator_client.post(reverse("runs:view_delete", args=[nobodys.pk]), {"confirm": "yes"}).status_code == 302
    assert list(SavedView.objects.values_list("name", flat=True)) == ["Theirs"]

    operator.user_permissions.add(Permission.objects.get(codename="delete_savedview"))
    strip = operator_client.get(reverse("runs:list")).content.decode()
    assert reverse("runs:view_delete", args=[theirs.pk]) in strip
    assert operator_client.post(reverse("runs:view_delete", args=[theirs.pk]), {"confirm": "yes"}).status_code == 302
    assert not SavedView.objects.exists()
