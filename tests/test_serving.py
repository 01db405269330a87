"""Serving like a product: with DEBUG off a wrong URL or a failing page shows the console's own
page (no URLconf, no traceback), every page carries the favicon and the shortcuts script."""

import json
import os
import subprocess
import sys
import urllib.request

import pytest
from django.test import Client, override_settings
from django.urls import path

from gg_console.urls import urlpatterns as console_urls
from runs.models import Run
from tests.console_server import ConsoleServer, ask

pytestmark = pytest.mark.django_db


def _boom(request):
    raise RuntimeError("secret detail that must not reach the browser")


urlpatterns = [*console_urls, path("boom/", _boom)]


@override_settings(DEBUG=False)
def test_a_wrong_url_shows_the_consoles_own_404(viewer_client):
    response = viewer_client.get("/runs/999999/nothing-here/")
    assert response.status_code == 404
    body = response.content.decode()
    assert "Nothing here" in body and "/runs/999999/nothing-here/" in body
    assert "URLconf" not in body and "Django" not in body
    assert 'href="/glossary/"' in body  # the console's frame, not a bare error


@override_settings(DEBUG=False)
def test_a_missing_run_is_the_same_404(viewer_client):
    response = viewer_client.get("/runs/999999/")
    assert response.status_code == 404 and "Nothing here" in response.content.decode()


@override_settings(DEBUG=False)
def test_the_404_says_what_is_missing_when_the_page_said(viewer_client):
    run = Run.objects.create(name="here")
    missing_agent = viewer_client.get(f"/runs/{run.pk}/agents/<b>nobody</b>/").content.decode()
    assert "Run &#x27;here&#x27; has no agent &#x27;&lt;b&gt;nobody&lt;/b&gt;&#x27;." in missing_agent  # escaped
    no_route = viewer_client.get("/no/such/page/").content.decode()
    assert 'id="not-found-reason"' not in no_route and "There is no page at" in no_route


@override_settings(DEBUG=False)
def test_an_anonymous_wrong_url_is_a_404_too(client):
    response = client.get("/no/such/page/")
    assert response.status_code == 404 and "Nothing here" in response.content.decode()


@override_settings(DEBUG=False)
def test_a_request_that_cannot_be_served_shows_the_consoles_own_400_saying_why(viewer_client, settings):
    wrong_host = Client(HTTP_HOST="console.example.com").get("/login/")
    body = wrong_host.content.decode()
    assert wrong_host.status_code == 400 and "names it answers to are in DJANGO_ALLOWED_HOSTS" in body
    assert "/static/js/shortcuts.js" in body  # the console's frame, not Django's bare "Bad Request (400)"
    assert "All runs" not in body  # a link on that host name would be refused the same way
    fields = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS + 1
    too_many = viewer_client.post("/runs/selected/", {"run": [str(n) for n in range(fields)], "action": "export"})
    assert too_many.status_code == 400 and "DATA_UPLOAD_MAX_NUMBER_FIELDS" in too_many.content.decode()
    assert "All runs" in too_many.content.decode()


@override_settings(DEBUG=False)
def test_a_refusal_shows_the_consoles_own_403_saying_which_permission(viewer_client):
    run = Run.objects.create(name="kept")
    for url, method, said in [
        (f"/runs/{run.pk}/delete/", "get", "Deleting a run needs the runs.delete_run permission."),
        (f"/runs/{run.pk}/end/", "post", "Marking a run ended needs the runs.add_run permission."),
        ("/runs/new/", "get", "Launching, cancelling and saving configurations need the runs.add_run permission."),
        ("/views/save/", "post", "Saving a view needs the runs.add_run permission (as launching does)."),
    ]:
        response = getattr(viewer_client, method)(url)
        body = response.content.decode()
        assert response.status_code == 403, url
        assert f'<p id="refused-reason">{said}</p>' in body and "signed in as <b>viewer</b>" in body, url
        assert "Users page" in body and 'href="/glossary/"' in body  # who grants it; the console's frame
    assert Run.objects.filter(name="kept").exists()


@override_settings(DEBUG=False)
def test_a_form_sent_with_a_stale_csrf_token_says_what_to_do(viewer):
    client = Client(enforce_csrf_checks=True)
    client.force_login(viewer)
    response = client.post("/runs/import/", {"name": "x"})
    body = response.content.decode()
    assert response.status_code == 403 and "out-of-date security token" in body
    assert "reload the page and send the form again" in body and "Users page" not in body
    assert 'href="/glossary/"' in body and not Run.objects.filter(name="x").exists()


@override_settings(DEBUG=False, ROOT_URLCONF=__name__)
def test_a_failing_page_shows_the_consoles_own_500(viewer):
    client = Client(raise_request_exception=False)
    client.force_login(viewer)
    response = client.get("/boom/")
    assert response.status_code == 500
    body = response.content.decode()
    assert "Something went wrong" in body and "Nothing you stored is lost" in body
    assert "secret detail" not in body and "Traceback" not in body


def test_every_page_has_the_favicon_and_the_shortcuts(viewer_client):
    body = viewer_client.get("/").content.decode()
    assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in body
    assert '<script src="/static/js/shortcuts.js" defer></script>' in body
    assert 'id="shortcuts"' in body  # the `?` dialog
    assert viewer_client.get("/static/favicon.svg").status_code == 200



def test_what_loading_the_server_left_is_out_of_the_collectors_full_passes():
    # In a process of its own, as `daphne gg_console.asgi:application` loads it: a full collection
    # afterwards walks only what came after (under load one runs every few seconds and holds every
    # socket of the process while it walks).
    # A young collection every 10,000 allocations, not Python's 700 (runs.apps): a report's objects live
    # until it is written, and each young pass walks them.
    code = ("import gc; import gg_console.asgi; gc.collect(); "
            "print(gc.get_threshold()[0], gc.get_freeze_count(), len(gc.get_objects()))")
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "gg_console.settings"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    young, frozen, tracked = map(int, out.stdout.split()[-3:])
    assert frozen > 50_000 and tracked < frozen / 10 and young >= 10_000, out.stdout
    # The same young collections in a process that only sets Django up (manage.py import, the benches).
    setup = "import gc, django; django.setup(); print(gc.get_threshold()[0])"
    out = subprocess.run([sys.executable, "-c", setup], capture_output=True, text=True, check=True, env=env)
    assert int(out.stdout.split()[-1]) >= 10_000, out.stdout


def test_database_url_takes_a_sqlite_file_and_names_what_it_refuses(tmp_path):
    """DATABASE_URL=sqlite:///PATH puts the embedded default's database elsewhere, with its settings
    (WAL); a database the console does not run on is refused in words (it was a TypeError from the
    pool option, given to SQLite too, and any other engine failed later and obscurely)."""
    server = ConsoleServer(tmp_path)
    server.env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'elsewhere.sqlite3'}"
    server.manage("migrate", "--noinput")
    mode = server.manage("shell", "-c", "from django.db import connection; "
                         "print(connection.cursor().execute('PRAGMA journal_mode').fetchone()[0])").stdout.split()[-1]
    assert mode == "wal" and (tmp_path / "elsewhere.sqlite3").stat().st_size > 0
    assert not (tmp_path / "db.sqlite3").exists()
    server.env["DATABASE_URL"] = "mysql://user:secret@localhost/gg"
    refused = server.manage("check", check=False)
    assert refused.returncode != 0
    assert ("DATABASE_URL names a mysql database; the console runs on PostgreSQL (postgres://...) or SQLite "
            "(sqlite:///PATH).") in refused.stderr and "secret" not in refused.stderr


def test_daphne_takes_a_body_as_django_would_and_refuses_one_too_big_unread(tmp_path):
    """Twisted under Daphne parsed every multipart body itself (whole, in memory, with the email
    package, in the event loop that serves every request and socket) before Django saw it: a 130 MB
    import held the server 3 s, and anyone could send one without logging in. Now the body reaches
    Django untouched: one Twisted's parser refuses (no boundary) gets Django's answer (the login
    form's CSRF refusal), not Twisted's bare 400. A body over GG_MAX_REQUEST_BYTES, declared or
    chunked, is a 413 that says what to do instead, and the server goes on serving."""
    server = ConsoleServer(tmp_path)
    server.env["GG_MAX_REQUEST_BYTES"] = "100000"
    server.manage("migrate", "--noinput")
    server.start()

    def post(body, **headers):
        return ask(urllib.request.Request(f"{server.url}/login/", data=body, method="POST", headers=headers))

    try:
        no_boundary = post(b"a body, no boundary", **{"Content-Type": "multipart/form-data"})
        declared, chunked = post(b"x" * 100_001), post(iter([b"x" * 60_000, b"x" * 60_000]))
        under = post(b"x" * 100_000)
        page = ask(urllib.request.Request(f"{server.url}/login/"))
    finally:
        server.stop()
    assert no_boundary[0] == 403 and "CSRF" in no_boundary[2]
    for status, headers, text in (declared, chunked):
        assert status == 413 and "at most 100,000 bytes here (GG_MAX_REQUEST_BYTES)" in text
        assert "manage.py ingest PATH --run NAME" in text
    assert under[0] == 403 and page[0] == 200


def test_a_body_past_the_anonymous_bound_is_read_only_for_someone_signed_in(tmp_path):
    """Four anonymous 1,000 MB POSTs held 2 GB of the process and stalled its pages 4 s: a body over
    GG_MAX_ANONYMOUS_BYTES, declared or chunked, is asked for a session or a token before it is read."""
    server = ConsoleServer(tmp_path)
    server.env["GG_MAX_ANONYMOUS_BYTES"] = "100000"
    server.setup()
    session_key, run = server.operator_session_and_run("pushed")
    server.start()

    def post(body, path="/login/", **headers):
        return ask(urllib.request.Request(f"{server.url}{path}", data=body, method="POST", headers=headers))

    line = b'{"type":"log","message":"' + b"x" * 1000 + b'"}\n'
    try:
        anonymous, anonymous_chunked = post(b"x" * 200_000), post(iter([b"x" * 60_000, b"x" * 60_000]))
        forged = post(b"x" * 200_000, Cookie="sessionid=not-a-session", Authorization="Bearer not-a-token")
        small = post(b"x" * 100_000)
        session = post(b"x" * 200_000, Cookie=f"sessionid={session_key}")
        pushed = server.push_events("pushed", line * 200)  # 200 KB with the token
        page = ask(urllib.request.Request(f"{server.url}/login/"))
    finally:
        server.stop()
    for status, _, text in (anonymous, anonymous_chunked, forged):
        assert status == 401 and "over 100,000 bytes needs a signed-in session or Authorization: Bearer" in text
    assert small[0] == 403 and session[0] == 403 and "CSRF" in session[2]  # Django's answer: the body was read
    assert pushed[0] == 200 and json.loads(pushed[2])["stored"] == 200 and page[0] == 200
