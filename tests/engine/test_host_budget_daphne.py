"""Host work stays inside the program's budget and off the server (issue 19), on a real Daphne.

A code agent launched from the form, with a 2 s budget, writes a 3 MB file of `aaa…ab` lines and
then searches it for `(a+)+$` over and over — with a backtracking engine one line takes seconds
and doubles per `a`. The program ends with its budget, its `durationMs` counts the host time, and
pages served by the same process answer in well under a second all the while."""

import http.cookiejar
import json
import shutil
import time
import urllib.parse
import urllib.request

import pytest

from runs.engine.sandbox.guest import build_guest
from tests.console_server import ConsoleServer
from tests.launch_helpers import form_fields

PROGRAM = """import gg
gg.files.write_file("big.txt", ("a" * 29 + "b\\n") * 100000)
while True:
    gg.files.search("(a+)+$", None, 1)
"""
SPEC = {
    "task": "Search.",
    "agents": [{"slug": "coder", "name": "Coder", "executionMode": "responses_as_code", "programLanguage": "python",
                "capabilities": [{"id": "responses-as-code", "enabled": True, "params": {"timeoutSecs": 2}},
                                 {"id": "write-file", "enabled": True}, {"id": "search", "enabled": True}]}],
    "limits": {"maxTurns": 1, "maxRuntimeSecs": 60, "maxParallel": 1, "maxConsecutiveErrors": 3},
    "provider": {"kind": "scripted", "script": {"coder": [{"program": PROGRAM}]}},
}
SETUP = f"""
import json
from runs.models import SavedConfiguration
print(SavedConfiguration.objects.create(name="catastrophic", spec=json.loads({json.dumps(SPEC)!r})).pk)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    server = ConsoleServer(tmp_path_factory.mktemp("budget-var"))
    server.setup()
    guest = build_guest()  # the compiled guest, so the server does not build its own during the test
    (server.var_dir / "sandbox").mkdir()
    shutil.copy(guest, server.var_dir / "sandbox" / guest.name)
    server.start()
    yield server
    server.stop()


def test_a_catastrophic_search_ends_with_the_budget_and_the_server_keeps_answering(server):
    session_key, _ = server.operator_session_and_run("unused")
    configuration = server.manage("shell", "-c", SETUP).stdout.split()[-1]
    jar = http.cookiejar.CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(jar))
    jar.set_cookie(http.cookiejar.Cookie(0, "sessionid", session_key, None, False, "127.0.0.1", False, False, "/",
                                         True, False, None, True, None, None, {}))
    page = opener.open(f"{server.url}/runs/new/?configuration={configuration}", timeout=30).read().decode()
    fields = [(name, value) for name, values in form_fields(page).items() for value in values] + [("action", "launch")]
    csrf = next(c.value for c in jar if c.name == "csrftoken")
    request = urllib.request.Request(f"{server.url}/runs/new/", data=urllib.parse.urlencode(fields).encode(),
                                     headers={"X-CSRFToken": csrf, "Referer": f"{server.url}/runs/new/"})
    launched = opener.open(request, timeout=30)
    run_pk = int(launched.url.rstrip("/").split("/")[-2])

    latencies, started = [], time.monotonic()
    while time.monotonic() - started < 60:
        t0 = time.monotonic()
        opener.open(f"{server.url}/", timeout=10).read()
        latency = time.monotonic() - t0
        lines = opener.open(f"{server.url}/api/runs/{run_pk}/events", timeout=10).read().decode().splitlines()
        records = [json.loads(line) for line in lines if line.strip()]
        latencies.append(latency)
        if any(r.get("type") == "session_ended" for r in records):
            break
        time.sleep(0.1)
    execution = next((r for r in records if r.get("type") == "code_execution"), None)
    assert execution is not None, records
    assert not execution["ok"] and 1500 <= execution["durationMs"] <= 3500, execution
    assert max(latencies) < 1.0, latencies
    assert len(latencies) >= 5  # the pages were asked while the program ran
