"""Helpers for the launch tests: submit a rendered form the way a browser would, wait for a run."""

import io
import json
import time
import zipfile
from html.parser import HTMLParser

from django.db import OperationalError
from django.http import QueryDict
from django.urls import reverse

from runs.models import Run


class _FormFields(HTMLParser):
    """The successful controls of `form#launch-form`: [(name, value)] in document order."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.fields = []
        self.in_form = False
        self.select = None
        self.select_first = None
        self.textarea = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "form" and a.get("id") == "launch-form":
            self.in_form = True
        if not self.in_form or "name" not in a and tag != "option":
            return
        if tag == "input":
            kind = a.get("type", "text")
            if kind in ("checkbox", "radio"):
                if "checked" in a:
                    self.fields.append((a["name"], a.get("value", "on")))
            elif kind not in ("file", "submit", "button"):
                self.fields.append((a["name"], a.get("value", "")))
        elif tag == "select":
            self.select, self.select_first = a["name"], None
        elif tag == "option" and self.select:
            if self.select_first is None:
                self.select_first = a.get("value", "")
            if "selected" in a:
                self.fields.append((self.select, a.get("value", "")))
                self.select = None
        elif tag == "textarea":
            self.textarea = [a["name"], ""]

    def handle_data(self, data):
        if self.textarea is not None:
            self.textarea[1] += data

    def handle_endtag(self, tag):
        if tag == "form":
            self.in_form = False
        elif tag == "select" and self.select:
            self.fields.append((self.select, self.select_first or ""))
            self.select = None
        elif tag == "textarea" and self.textarea is not None:
            # Browsers drop the newline right after <textarea>.
            self.fields.append((self.textarea[0], self.textarea[1].removeprefix("\n")))
            self.textarea = None


def form_fields(html):
    """The launch form's fields as a dict of lists (what `client.post` sends as a multi-dict)."""
    parser = _FormFields()
    parser.feed(html if isinstance(html, str) else html.decode())
    out = {}
    for name, value in parser.fields:
        out.setdefault(name, []).append(value)
    return out


def wait_for_end(run, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            run.refresh_from_db()
        except OperationalError:  # the worker's write holds the shared in-memory test database: read again
            time.sleep(0.02)
            continue
        if not run.is_live:
            _until_threads_idle(deadline)
            return run
        time.sleep(0.05)
    raise AssertionError(f"run {run.pk} still {run.status} after {timeout} s")


def _until_threads_idle(deadline):
    """A run reads ended a moment before its thread's last writes (the closing status, its facts);
    on the shared in-memory test database a request made then would find the table locked."""
    from runs.launch import dispatch

    while dispatch._threads.busy() and time.monotonic() < deadline:
        time.sleep(0.02)


SLOW_SCRIPT = {"root": [{"delayMs": 150, "toolCalls": [{"name": "list_dir", "args": {"path": "."}}]}] * 200}


def launch_slow_run(client):
    """Launch a scripted run of 200 turns 150 ms apart from the form; the Run, once two turns in."""
    fields = form_fields(client.get(reverse("runs:new")).content)
    fields.update({"task": ["List the workspace forever."], "provider.kind": ["script"],
                   "provider.script": [json.dumps(SLOW_SCRIPT)]})
    assert client.post(reverse("runs:new"), fields).status_code == 302
    run = Run.objects.get()
    while run.turn_count < 2:
        run.refresh_from_db()
    return run


def retry_locked(write):
    """`write()`, retried while the worker's write holds the shared in-memory test database (a write
    meeting another fails at once there)."""
    for _ in range(50):
        try:
            return write()
        except OperationalError:
            time.sleep(0.02)
    return write()


def querydict(fields) -> QueryDict:
    """A POST's QueryDict from {name: [values]} (what form_fields reads off a page)."""
    data = QueryDict(mutable=True)
    for name, values in fields.items():
        data.setlist(name, values)
    return data


def zip_upload(name: str, members: dict) -> io.BytesIO:
    """An uploaded zip called `name` holding {path: text}, ready to post as a file."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path, text in members.items():
            archive.writestr(path, text)
    buffer.seek(0)
    buffer.name = name
    return buffer
