"""Security: every HTTP route and websocket route refuses anonymous users, every POST needs its
CSRF token, every rendered POST form carries one, a NUL anywhere in a request or handshake is a 400
that says where, and `check --deploy` passes with the production settings the README documents.

The routes are discovered by walking the URL resolver and the websocket routing, so a route added
later is covered without touching this file; the only exceptions are named here.
"""

import io
import logging
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from channels.db import database_sync_to_async
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from gg_console.asgi import application
from gg_console.routing import websocket_urlpatterns
from runs.models import IngestToken, Run, SavedConfiguration
from tests.pages_helpers import load

REPO = Path(__file__).resolve().parent.parent
LOGIN_PAGES = {"login", "admin:login"}  # the login forms themselves
TOKEN_API = {"runs:api_events", "runs:api_event", "runs:api_rejected", "runs:api_report", "runs:api_compare"}  # a bearer token or a session; never anonymous
SAMPLE = {"int": "1", "str": "x", "slug": "x", "path": "x", "uuid": "00000000-0000-0000-0000-000000000000"}


def walk(patterns, prefix="", namespace=""):
    """(route, name, callback) of every URL pattern, nested includes flattened."""
    for p in patterns:
        if isinstance(p, URLResolver):
            ns = f"{namespace}{p.namespace}:" if p.namespace else namespace
            yield from walk(p.url_patterns, prefix + str(p.pattern), ns)
        elif isinstance(p, URLPattern):
            yield prefix + str(p.pattern), f"{namespace}{p.name or ''}", p.callback


def concrete(route, values=SAMPLE):
    """A path that the route matches: converters and regex groups filled with sample values."""
    path = re.sub(r"(?<!\?P)<(?:(\w+):)?(\w+)>", lambda m: values.get(m[2], values[m[1] or "str"]), route)
    path = re.sub(r"\(\?P<\w+>([^)]*)\)", lambda m: "x" if m[1] == ".*" else m[1].split("|")[0], path)
    return "/" + path.replace("^", "").replace("$", "")


ROUTES = sorted(set(walk(get_resolver().url_patterns)), key=lambda r: r[0])


def test_the_walk_reaches_every_route():
    for route, name, callback in ROUTES:
        # (a nested regex loses its "^" in ResolverMatch.route)
        assert resolve(concrete(route)).route.replace("^", "") == route.replace("^", ""), name
    names = {name for _, name, _ in ROUTES}
    assert {"runs:list", "runs:detail", "runs:feed", "runs:new", "surfaces:reference"} <= names


def test_only_the_documented_routes_opt_out_of_login():
    opted_out = {name for _, name, callback in ROUTES if getattr(callback, "login_required", True) is False}
    assert opted_out == LOGIN_PAGES | TOKEN_API


def _refused(response):
    if response.status_code in (401, 403):
        return True
    return response.status_code == 302 and response["Location"].startswith(("/login/", "/admin/login/"))


@pytest.mark.django_db
def test_anonymous_is_refused_everywhere(client):
    # One test over every route (not one per route): each would create its own users and session.
    allowed = []
    for route, name, _ in ROUTES:
        if name in LOGIN_PAGES | TOKEN_API:
            continue
        path = concrete(route)
        for method in (client.get, client.post):
            response = method(path)
            if not _refused(response):
                allowed.append(f"{method.__name__.upper()} {path} ({name}) -> {response.status_code}")
    assert allowed == []


@pytest.mark.django_db
def test_token_api_refuses_without_a_valid_token(client, operator):
    run = Run.objects.create(name="guarded", created_by=operator)
    bad = {"HTTP_AUTHORIZATION": "Bearer not-a-token"}
    for path in ("/api/runs/guarded/events", f"/api/runs/{run.pk}/events", f"/api/runs/{run.pk}/report",
                 f"/api/runs/compare?a={run.pk}&b={run.pk}"):
        for headers in ({}, bad):
            assert client.get(path, **headers).status_code == 401, path
            assert client.post(path, b'{"type":"log"}\n', content_type="application/x-ndjson",
                               **headers).status_code in (401, 405), path
    # A POST to a new name without a token creates nothing, and a session is not a token.
    assert client.post("/api/runs/new-name/events", b"{}\n", content_type="application/x-ndjson").status_code == 401
    client.force_login(operator)
    assert client.post("/api/runs/new-name/events", b"{}\n", content_type="application/x-ndjson").status_code == 401
    assert not Run.objects.filter(name="new-name").exists()
    assert run.events.count() == 0
    # The positive control: the same request with a real token is accepted.
    token = IngestToken.objects.create(user=operator)
    ok = Client().post(f"/api/runs/{run.pk}/events", b'{"type":"log"}\n', content_type="application/x-ndjson",
                       HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert ok.status_code == 200 and run.events.count() == 1


@pytest.mark.django_db
def test_every_post_needs_the_csrf_token(operator):
    client = Client(enforce_csrf_checks=True)
    client.force_login(operator)
    accepted = []
    for route, name, _ in ROUTES:
        if name in TOKEN_API:
            continue
        response = client.post(concrete(route), {"name": "x"})
        if response.status_code != 403:
            accepted.append(f"POST {route} ({name}) without a CSRF token -> {response.status_code}")
    assert accepted == []


@pytest.mark.django_db
def test_every_rendered_post_form_carries_the_token(operator_client, operator):
    run = load("forms")
    config = SavedConfiguration.objects.create(name="c", spec={}, created_by=operator)
    values = {**SAMPLE, "pk": str(run.pk), "run": str(run.pk), "agent_id": "root"}
    forms = {}
    for route, name, _ in ROUTES:
        if name.startswith("admin:") or name in TOKEN_API:
            continue
        path = concrete(route, {**values, "pk": str(config.pk)} if "configuration" in name else values)
        response = operator_client.get(path)
        if response.status_code != 200 or "html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode()
        for form in re.findall(r"<form\b[^>]*\bmethod=\"?post\"?[^>]*>.*?</form>", html, re.S | re.I):
            assert 'name="csrfmiddlewaretoken"' in form, f"{name}: a POST form without its CSRF token"
            forms[re.search(r'action="([^"]*)"', form)[1] if 'action="' in form else path] = name
        if "hx-post" in html:  # htmx requests carry the token in a header set on <body>
            assert re.search(r"""hx-headers='\{"X-CSRFToken": "\w+"\}'""", html), f"{name}: hx-post without the token"
    # Not vacuous: the forms every operator uses were seen.
    assert {reverse("logout"), reverse("runs:new"), reverse("runs:import")} <= set(forms), forms


# ---------------------------------------------------------------------------------------------
# Websockets


@pytest.fixture
def session_cookie(operator):
    client = Client()
    client.force_login(operator)
    return (b"cookie", f"sessionid={client.cookies['sessionid'].value}".encode())


async def _connects(path, *headers):
    comm = WebsocketCommunicator(application, path, headers=[(b"origin", b"http://testserver"), *headers])
    connected, _ = await comm.connect()
    if connected:
        await comm.disconnect()
    return connected


def _ws_routes():
    return [str(p.pattern) for p in websocket_urlpatterns]


def test_there_are_websocket_routes_to_check():
    assert "ws/runs/<int:run>/feed/" in _ws_routes()


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("route", _ws_routes())
async def test_every_websocket_route_refuses_anonymous(route, session_cookie):
    run = await database_sync_to_async(Run.objects.create)(name="ws")
    path = concrete(route, {**SAMPLE, "int": str(run.pk)})
    assert not await _connects(path)
    assert not await _connects(path, (b"cookie", b"sessionid=forged"))
    # The same socket opens for a logged-in operator: the refusal above is the auth, not the path.
    assert await _connects(path, session_cookie)


@pytest.mark.asyncio
@pytest.mark.django_db(transaction=True)
async def test_a_socket_whose_handshake_holds_a_nul_is_refused(session_cookie):
    """Before the session is looked up: on PostgreSQL a cookie holding a NUL failed the handshake there."""
    run = await database_sync_to_async(Run.objects.create)(name="ws")
    path = f"/ws/runs/{run.pk}/feed/"
    assert await _connects(path, session_cookie)  # the operator's socket opens: what follows is the NUL
    assert not await _connects(path, (b"cookie", session_cookie[1] + b"; theme=a\x00b"))
    assert not await _connects(path + "?after=1%00", session_cookie)
    assert not await _connects(path, session_cookie, (b"user-agent", b"a\x00b"))


PRODUCTION_ENV = {
    "GG_CONSOLE_PRODUCTION": "1",
    "DJANGO_SECRET_KEY": "a-long-random-production-secret-for-the-deploy-check-0123456789abcdef",
    "DJANGO_ALLOWED_HOSTS": "console.example.com",
}


def _check_deploy(extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GG_CONSOLE_", "DJANGO_"))}
    env.update(extra, DJANGO_SETTINGS_MODULE="gg_console.settings")
    return subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )


def test_check_deploy_passes_with_the_documented_production_settings(tmp_path):
    done = _check_deploy({**PRODUCTION_ENV, "GG_CONSOLE_VAR": str(tmp_path)})
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_fails_on_the_development_defaults(tmp_path):
    done = _check_deploy({"GG_CONSOLE_VAR": str(tmp_path)})  # the check is not vacuous
    assert done.returncode != 0
    assert "security.W" in done.stderr + done.stdout


def test_production_refuses_to_start_without_a_secret_key(tmp_path):
    done = _check_deploy({"GG_CONSOLE_PRODUCTION": "1", "GG_CONSOLE_VAR": str(tmp_path)})
    assert done.returncode != 0
    assert "DJANGO_SECRET_KEY" in done.stderr


@pytest.mark.django_db
def test_password_guessing_on_the_login_form_is_paused(viewer, operator):
    """Ten failed log-ins in a row for one username from one address pause its log-ins from there
    (django-axes): the right password is refused too, with the console's page saying what to do; the
    other accounts are untouched, and an administrator lifts the pause."""
    guesser = Client()
    for n in range(10):
        response = guesser.post(reverse("login"), {"username": "viewer", "password": f"guess-{n}"})
    assert response.status_code == 429
    refused = guesser.post(reverse("login"), {"username": "viewer", "password": "viewer-pass-123"})
    body = refused.content.decode()
    assert refused.status_code == 429 and "_auth_user_id" not in guesser.session
    assert "10 failed log-ins in a row for <b>viewer</b>" in body and "refused for 15 minutes" in body
    assert "manage.py axes_reset_username viewer" in body
    other = Client()
    assert other.post(reverse("login"), {"username": "operator", "password": "operator-pass-123"}).status_code == 302
    call_command("axes_reset_username", "viewer")
    assert guesser.post(reverse("login"), {"username": "viewer", "password": "viewer-pass-123"}).status_code == 302


@pytest.mark.django_db
def test_a_nul_anywhere_in_a_request_is_a_400_that_says_where(operator_client, operator):
    """PostgreSQL's text cannot hold a NUL: a lookup by an address, a filter, a cookie or a token holding
    one failed there with a 500 (SQLite found nothing). Every route, each name in its address a NUL."""
    load("multi", "multi_agent.ndjson")
    named = {**SAMPLE, **{kind: "a%00b" for kind in ("str", "slug", "path")}}
    answered = {}
    for route, name, _ in ROUTES:
        # its query string, and its address where a name in it can hold a NUL (not a whole number's)
        for path in {concrete(route) + "?q=a%00b", concrete(route, named)} - {concrete(route)}:
            response = operator_client.get(path)
            answered[path] = (response.status_code, "holds a NUL character" in response.content.decode())
    wrong = {path: a for path, a in answered.items() if a != (400, True)}
    assert len(answered) > len(ROUTES) and not wrong, wrong
    api = operator_client.get("/api/runs/a%00b/report")
    assert api.json()["error"].startswith("The address holds a NUL character")
    token = IngestToken.objects.create(user=operator)
    for response, where in [
        (Client().get("/", HTTP_COOKIE="sessionid=abcdefgh\x00ijk"), "A cookie"),
        (Client().post("/api/runs/1/events", b'{"type":"log"}\n', content_type="application/x-ndjson",
                       HTTP_AUTHORIZATION=f"Bearer {token.key}\x00"), "The Authorization header"),
        (operator_client.post("/runs/new/validate/", "name=a%00b",
                              content_type="application/x-www-form-urlencoded"), "The form"),
    ]:
        assert response.status_code == 400 and where + " holds a NUL character" in response.content.decode(), where
    # A stream's NUL is escaped and stored, not refused (runs.stream.record).
    ok = Client().post("/api/runs/nul-in-records/events", b'{"type":"log","message":"a\\u0000b"}\n',
                       content_type="application/x-ndjson", HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert ok.status_code == 200
    # A stream sent as the README's curl sends it (a form's content type) is a stream, not a form:
    # never parsed as one (1,500 '&' would be more fields than Django takes).
    lines = b"".join(b'{"type":"log","message":"a&b=c"}\n' for _ in range(1500))
    as_curl = Client().post("/api/runs/curl/events", lines, content_type="application/x-www-form-urlencoded",
                            HTTP_AUTHORIZATION=f"Bearer {token.key}")
    assert as_curl.status_code == 200 and as_curl.json()["stored"] == 1500


@pytest.mark.django_db
def test_a_refused_request_is_one_line_of_the_log_without_its_stack(operator_client):
    """Anyone can send thousands of suspicious requests: each is its reason in the log, not a traceback."""
    handler = logging.getLogger("django.security").handlers[0]
    stream, handler.stream = handler.stream, io.StringIO()
    try:
        assert operator_client.get("/?q=a%00b").status_code == 400
        logged = handler.stream.getvalue()
    finally:
        handler.stream = stream
    assert logged.splitlines() == ["The query string holds a NUL character (%00), which nothing in this console can "
                                   "hold: no run, agent, store or filter is named with one."]
