"""A real Daphne serving the console on its own SQLite file, in its own process, exactly as an
operator runs it (the e2e tests' `console_server` fixture, and the feed and engine tests that need a
real server). Tests feed it the way operators do: `manage.py` commands against the same database
(`server.manage(...)`) or the HTTP API with `server.token`; `login` signs a browser page in.
"""

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests.paths import REPO

PASSWORD = "e2e-pass-123456"

SETUP_USERS = f"""
from django.contrib.auth.models import Permission, User
from runs.models import IngestToken
op = User.objects.create_user("operator", password="{PASSWORD}")
op.user_permissions.add(Permission.objects.get(codename="add_run", content_type__app_label="runs"))
User.objects.create_user("viewer", password="{PASSWORD}")
print(IngestToken.objects.create(user=op, label="e2e").key)
"""

# A logged-in operator's session (the cookie a browser sends) and a new run: `{name!r}` filled in.
OPERATOR_SESSION_AND_RUN = """
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
from django.contrib.auth.models import User
from django.contrib.sessions.backends.db import SessionStore
from runs.models import Run
user = User.objects.get(username="operator")
session = SessionStore()
session[SESSION_KEY] = str(user.pk)
session[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
session[HASH_SESSION_KEY] = user.get_session_auth_hash()
session.create()
print(session.session_key, Run.objects.create(name={name!r}, created_by=user).pk)
"""


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class ConsoleServer:
    """Daphne serving gg_console.asgi on a private var/ directory."""

    def __init__(self, var_dir: Path):
        self.var_dir = var_dir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        # DEBUG off, as scripts/serve serves: the pages a browser sees are the product's.
        self.env = {**os.environ, "GG_CONSOLE_VAR": str(var_dir), "DJANGO_SETTINGS_MODULE": "gg_console.settings",
                    "DJANGO_DEBUG": "0"}
        self.env.pop("DATABASE_URL", None)
        self.env.pop("REDIS_URL", None)
        self.process = None
        self.token = None

    def manage(self, *args, input=None, check=True):
        return subprocess.run(
            [sys.executable, "manage.py", *map(str, args)],
            cwd=REPO, env=self.env, input=input, capture_output=True, text=True, check=check, timeout=300,
        )

    def setup(self):
        self.manage("migrate", "--noinput")
        self.token = self.manage("shell", "-c", SETUP_USERS).stdout.strip().splitlines()[-1]

    def operator_session_and_run(self, name):
        """(session key of a logged-in `operator`, pk of a new run called `name`)."""
        out = self.manage("shell", "-c", OPERATOR_SESSION_AND_RUN.format(name=name)).stdout
        session_key, pk = out.splitlines()[-1].split()
        return session_key, int(pk)

    def push_events(self, run, body: bytes):
        """POST an NDJSON body to /api/runs/<run>/events with the token, as a pushing gg does:
        (status, headers, text), whatever the status."""
        return ask(urllib.request.Request(f"{self.url}/api/runs/{run}/events", data=body, method="POST", headers={
            "Authorization": f"Bearer {self.token}", "Content-Type": "application/x-ndjson"}))

    def feed_socket(self, run_pk, session_key, after=0):
        """(URL, headers) of run `run_pk`'s feed socket as the operator's browser opens it."""
        url = self.url.replace("http://", "ws://") + f"/ws/runs/{run_pk}/feed/?after={after}"
        return url, {"Cookie": f"sessionid={session_key}", "Origin": self.url}

    def start(self):
        log = open(self.var_dir / "daphne.log", "ab")
        self.process = subprocess.Popen(
            [str(Path(sys.executable).with_name("daphne")), "-b", "127.0.0.1", "-p", str(self.port),
             "gg_console.asgi:application"],
            cwd=REPO, env=self.env, stdout=log, stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.process.poll() is not None:
                    raise RuntimeError((self.var_dir / "daphne.log").read_text())
                time.sleep(0.1)
        raise RuntimeError("daphne did not start listening within 30 s")

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def restart(self):
        self.stop()
        self.start()


def ask(request):
    """(status, headers, text) of an HTTP request, whatever its status."""
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, response.headers, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read().decode(errors="replace")


def login(page, server, username="operator"):
    page.goto(f"{server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/login/" not in url)
