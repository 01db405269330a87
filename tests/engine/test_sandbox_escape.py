"""The sandbox escape corpus: programs that try to reach the host's filesystem, network,
environment, processes and memory, or to exhaust the stack or the clock. Every one runs through
the real guest and membrane and must end as a runtime error or a sandbox limit, leaving nothing
outside the workspace, leaking nothing of the host, and leaving this process able to run the next
program."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.gg_schema import validate_record
from tests.sandbox_run import context, run

REPO = Path(__file__).resolve().parents[2]
CANARY_VAR, CANARY = "GG_ESCAPE_CANARY", "gg-escape-canary-7f3a91"  # the value must never come back
CONTAINED = {"program_throw", "program_api_error", "sandbox_timeout", "sandbox_out_of_memory", "sandbox_trap"}

CORPUS = {
    # filesystem, directly and through the membrane's file tools
    "open /etc/passwd": "print(open('/etc/passwd').read())",
    "pathlib": "import pathlib\nprint(pathlib.Path('/etc/hostname').read_text())",
    "write outside": "open('{outside}', 'w').write('x')",
    "list the root": "import os\nprint(os.listdir('/'))",
    "os.open": "import os\nos.open('/etc/passwd', os.O_RDONLY)",
    "io.open environ": "import io\nprint(io.open('/proc/self/environ', 'rb').read())",
    "files: traversal": "import gg\nprint(gg.files.read_file('../../../../etc/passwd').contents)",
    "files: absolute": "import gg\nprint(gg.files.read_file('/etc/passwd').contents)",
    "files: write outside": "import gg\ngg.files.write_file('../escaped.txt', 'x')",
    "files: symlink out": "import gg\nprint(gg.files.read_file('link/passwd').contents)",
    # processes and native code
    "os.system": "import os\nos.system('touch {outside}')",
    "subprocess": "import subprocess\nsubprocess.run(['touch', '{outside}'])",
    "ctypes": "import ctypes\nctypes.CDLL(None)",
    "threading": "import threading\nthreading.Thread(target=print).start()",
    # network
    "socket": "import socket\nsocket.create_connection(('127.0.0.1', 6379))",
    "urllib": "import urllib.request\nurllib.request.urlopen('http://127.0.0.1:5432/')",
    "http.client": "import http.client\nhttp.client.HTTPConnection('127.0.0.1', 80).request('GET', '/')",
    # environment
    "os.environ": "import os\nprint(dict(os.environ))\nraise RuntimeError(f'{{len(os.environ)}} variables')",
    "os.getenv": f"import os\nprint(os.getenv('{CANARY_VAR}'))",
    "/proc/self/environ": "print(open('/proc/self/environ').read())",
    # host memory
    "/proc/self/mem": "print(open('/proc/self/mem', 'rb').read(64))",
    "one big block": "x = bytearray(200 << 20)",
    "grow without end": "x = []\nwhile True:\n    x.append(bytearray(1 << 20))",
    "index past memory": "x = bytearray(8 << 30)",
    # recursion
    "plain recursion": "def f(n):\n    return f(n + 1)\nf(0)",
    "recursion limit lifted": "import sys\nsys.setrecursionlimit(10 ** 7)\ndef f(n):\n    return f(n + 1)\nf(0)",
    "recursive repr": "class A:\n    def __repr__(self):\n        return repr(self)\nrepr(A())",
    # infinite loops
    "while True": "while True:\n    pass",
    "catching the stop": "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
    "looping on the membrane": "import gg\nwhile True:\n    try:\n        gg.views.open_text('a', 'b')\n    except Exception:\n        pass",
}


pytestmark = pytest.mark.usefixtures("guest")


@pytest.fixture
def canary(monkeypatch):
    monkeypatch.setenv(CANARY_VAR, CANARY)  # a host secret the guest must never see


@pytest.mark.parametrize("name", CORPUS)
def test_escape_attempt_is_contained(tmp_path, canary, name):
    outside = tmp_path / "escaped.txt"
    ctx = context(tmp_path, capabilities=["read-file", "write-file"], timeout_secs=1.0,
                  max_memory_bytes=128 * 1024 * 1024)
    (ctx[0].workspace.root / "link").symlink_to("/etc")
    cwd, env = os.getcwd(), dict(os.environ)

    result = run(ctx, CORPUS[name].format(outside=outside))

    assert not result.outcome.ok
    assert result.outcome.error_type in CONTAINED, result.outcome.error
    assert result.outcome.model_messages[-1][0] == "Runtime error"
    told = repr(result.records) + repr(result.outcome.model_messages)
    assert CANARY not in told and "root:x:0:0" not in told  # nothing of the host came back
    assert not outside.exists() and not Path("/tmp/escaped.txt").exists()
    # this process is unharmed: same cwd and environment, and the next program runs
    assert (os.getcwd(), dict(os.environ)) == (cwd, env)
    assert run(context(tmp_path), "import gg\ngg.views.open_text('after', 'fine')").outcome.ok


def test_the_limits_report_their_kind(tmp_path):
    def error_type(source, **limits):
        return run(context(tmp_path, **limits), source).outcome.error_type

    assert error_type(CORPUS["while True"], timeout_secs=0.5) == "sandbox_timeout"
    assert error_type(CORPUS["grow without end"], max_memory_bytes=64 << 20) == "sandbox_out_of_memory"
    assert error_type(CORPUS["recursion limit lifted"]) == "sandbox_trap"


def test_run_program_command_contains_an_escape(tmp_path):
    program = tmp_path / "escape.py"
    program.write_text("import gg\nprint(gg.files.read_file('../../../../etc/passwd').contents)\n")
    env = {**os.environ, CANARY_VAR: CANARY, "DJANGO_SETTINGS_MODULE": "gg_console.settings"}
    done = subprocess.run(
        [sys.executable, "manage.py", "run_program", str(program), "--capability", "read-file",
         "--workspace", str(tmp_path / "ws"), "--timeout", "5"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    stream, model = done.stdout.split("--- model ---")
    assert '"type": "api_result"' in stream and '"ok": false' in stream
    records = [json.loads(line) for line in stream.splitlines() if line.strip()]
    for record in records:  # the printed stream is gg's, envelope and all
        validate_record(record, envelope=False)
    assert records[-1]["type"] == "code_execution"
    assert "Runtime error" in model and "climbs out of the workspace" in model
    assert "root:x:0:0" not in done.stdout
