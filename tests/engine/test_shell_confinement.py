"""The shell runs confined (issue 19): nothing outside the workspace is readable or writable, the
host's network and environment are out of reach, and no process outlives the call — on the shell
timeout, the program's budget, the run's wall clock or a cancel."""

import os
import socket
import threading
import time
from pathlib import Path

import pytest
from django.conf import settings

from runs.engine.loop import Engine
from runs.engine.validation import validate_spec
from runs.engine.telemetry import Telemetry
from runs.engine.tools import confined
from runs.engine.tools.errors import ToolError
from runs.engine.tools.workspace import Workspace
from runs.engine.tools.confined import Limits, run_confined
from tests.engine_helpers import call, of_type, spec, tool_agent
from tests.sandbox_run import context, run

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.skipif(confined.unavailable_reason() is not None,
                                reason=f"the shell cannot be confined here: {confined.unavailable_reason()}")


def survivors(marker):
    """Processes on the host whose command line holds `marker`."""
    found = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if marker in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"):
                    found.append(int(pid))
            except OSError:
                pass
    return found


def test_nothing_outside_the_workspace_is_readable_or_writable(tmp_path):
    ws = Workspace(tmp_path / "ws")
    secret = Path(settings.VAR_DIR) / "secret_key"
    targets = ["/etc/passwd", str(secret), str(REPO / "manage.py"), str(REPO / "var"), "/root", str(tmp_path)]
    result, record = ws.shell("; ".join(f"cat {t} || ls {t}" for t in targets)
                              + f"; echo planted > {tmp_path}/outside; echo x > /usr/x; echo kept > inside")
    assert "root:x:0" not in result["output"] and "manage" not in record["stdout"]
    if secret.exists():
        assert secret.read_text().strip() not in record["stdout"]
    assert record["stdout"].strip() == "ws" and "No such file" in record["stderr"]  # tmp_path holds only the bind
    assert not (tmp_path / "outside").exists() and (ws.root / "inside").read_text() == "kept\n"
    assert "Read-only file system" in record["stderr"]


def test_the_servers_environment_is_not_inherited(tmp_path, monkeypatch):
    monkeypatch.setenv("DJANGO_SECRET_KEY", "do-not-leak")
    result, record = Workspace(tmp_path).shell("env")
    assert "do-not-leak" not in record["stdout"] and "DJANGO" not in record["stdout"]
    assert f"HOME={tmp_path}" in record["stdout"]


def test_the_host_network_is_out_of_reach(tmp_path):
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    result, record = Workspace(tmp_path).shell(
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", {port}), 2)' && echo reached; "
        f"python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", 5432), 2)' && echo reached")
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()
    assert "reached" not in record["stdout"] and "Connection refused" in record["stderr"]


def test_a_detached_process_dies_with_the_command(tmp_path):
    ws = Workspace(tmp_path)
    result, _ = ws.shell("setsid sleep 40.25 & echo started")
    assert result["exit_code"] == 0 and "started" in result["output"]
    time.sleep(0.2)
    assert survivors("sleep 40.25") == []


def test_a_timeout_kills_the_whole_namespace(tmp_path):
    started = time.monotonic()
    result, record = Workspace(tmp_path).shell("setsid sleep 40.5 & nohup sleep 40.5 & sleep 30", timeout_secs=1)
    assert time.monotonic() - started < 5
    assert result["exit_code"] is None and record["exitCode"] == -1 and "killed after 1 s" in result["output"]
    time.sleep(0.2)
    assert survivors("sleep 40.5") == []


def test_the_process_count_is_limited(tmp_path):
    done = run_confined("for i in $(seq 60); do sleep 5.125 & done; echo all started", str(tmp_path), 10,
                        limits=Limits(processes=20))
    assert "all started" not in done.stdout and "fork" in done.stderr.lower()
    assert survivors("sleep 5.125") == []


def test_tmp_is_a_bounded_tmpfs(tmp_path):
    """/tmp's pages are the host's memory: three 1 GB files were taken there."""
    done = run_confined("head -c 20000000 /dev/zero > /tmp/big && echo written", str(tmp_path), 10,
                        limits=Limits(tmp_bytes=8 * 1024 ** 2))
    assert "written" not in done.stdout and "No space left on device" in done.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="a memory cgroup is made by root only")
def test_the_commands_processes_share_one_memory_limit(tmp_path):
    """Each process held to its address space alone, six forked ones held 9 GB."""
    hold = "python3 -c 'import time; b = bytearray(150 * 2**20); b[::4096] = b\"x\" * len(b[::4096]); time.sleep(2)'"
    alone = run_confined(f"{hold} && echo held", str(tmp_path), 20, limits=Limits(memory_bytes=400 * 2**20))
    assert alone.stdout.strip() == "held", alone.stderr  # 150 MB under the command's 400
    three = run_confined(f"({hold} && echo a) & ({hold} && echo b) & ({hold} && echo c) & wait", str(tmp_path), 20,
                         limits=Limits(memory_bytes=400 * 2**20))
    assert len(three.stdout.split()) < 3, three  # 450 MB over it: one at least is killed


@pytest.mark.skipif(os.geteuid() != 0, reason="a cgroup is made by root only")
def test_a_gone_servers_empty_groups_are_removed_by_the_next_one(tmp_path, monkeypatch):
    """A server killed mid-command cannot remove its groups: the next process's first command does."""
    gone = max(int(p) for p in os.listdir("/proc") if p.isdigit()) + 10_000_000  # above any pid the kernel gives
    left = [os.path.join(base, f"gg-shell-{gone}-1") for base in ("/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory")]
    for path in left:
        os.mkdir(path)
    monkeypatch.setattr(confined._Cgroups, "_serial", 0)  # as in a process making its first
    assert run_confined("echo ok", str(tmp_path), 10).stdout.strip() == "ok"
    assert not any(os.path.exists(path) for path in left)


def test_output_is_read_incrementally_and_kept_to_gg_bounds(tmp_path):
    result, record = Workspace(tmp_path).shell("head -c 50000000 /dev/zero | tr '\\0' a")
    assert len(record["stdout"]) == 16_384 and record["stdoutDropped"] == 50_000_000 - 16_384
    assert len(result["output"]) == 4096 and result["truncated"]


def test_the_file_size_is_held_to_the_workspace_quota(tmp_path):
    ws = Workspace(tmp_path, quota_bytes=100_000)
    result, record = ws.shell("head -c 200000 /dev/zero > big; ls -l big")
    assert (tmp_path / "big").stat().st_size <= 100_000 and "File size limit exceeded" in record["stderr"]
    with pytest.raises(ToolError) as spent:
        ws.write_file("more.txt", "x" * 10)
    assert spent.value.code == "limit-exceeded"


def test_a_shell_that_cannot_be_confined_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(confined, "BWRAP", str(tmp_path / "no-bwrap"))
    confined.unavailable_reason.cache_clear()
    try:
        with pytest.raises(ToolError) as refused:
            Workspace(tmp_path).shell("echo unconfined > proof")
    finally:
        confined.unavailable_reason.cache_clear()
    assert refused.value.code == "unavailable" and "bubblewrap" in refused.value.message
    assert not (tmp_path / "proof").exists()


def test_the_programs_budget_kills_the_shell(tmp_path):
    ctx = context(tmp_path, capabilities=["shell"], timeout_secs=2)
    started = time.monotonic()
    result = run(ctx, """
        import gg
        out = gg.shell.shell("setsid sleep 41.25 & sleep 30")
        gg.views.open_text("code", str(out.exit_code))
    """)
    assert time.monotonic() - started < 6
    assert result.of("shell")[0]["exitCode"] == -1
    time.sleep(0.2)
    assert survivors("sleep 41.25") == []


def test_cancel_and_the_runs_wall_clock_kill_a_running_shell(tmp_path):
    shell = [{"id": "shell", "enabled": True}]
    spec_, errors = validate_spec(spec([tool_agent("coder", shell)],
                                       {"coder": [call("shell", command="setsid sleep 42.5 & sleep 60")] * 2}))
    assert errors == []
    cancel = threading.Event()
    threading.Timer(1.0, cancel.set).start()
    telemetry = Telemetry(None, "s", sink=lambda records: None)
    started = time.monotonic()
    status = Engine(spec_, telemetry, tmp_path / "a", cancel.is_set).run()
    assert status == "canceled" and time.monotonic() - started < 6
    assert of_type(telemetry.emitted, "shell")[0]["exitCode"] == -1
    time.sleep(0.2)
    assert survivors("sleep 42.5") == []

    spec_, _ = validate_spec(spec([tool_agent("coder", shell)],
                                  {"coder": [call("shell", command="setsid sleep 42.75 & sleep 60")] * 2},
                                  limits={"maxRuntimeSecs": 1}))
    telemetry = Telemetry(None, "s", sink=lambda records: None)
    started = time.monotonic()
    status = Engine(spec_, telemetry, tmp_path / "b").run()
    assert status == "timed_out" and time.monotonic() - started < 6
    time.sleep(0.2)
    assert survivors("sleep 42.75") == []


def test_the_output_keeps_its_last_max_lines_lines_then_its_last_max_chars(tmp_path):
    ws = Workspace(tmp_path)
    result, record = ws.shell("seq 1 1000", output_lines=3)
    assert result["output"] == "998\n999\n1000\n" and result["truncated"]
    assert record["stdout"].startswith("1\n2\n") and "stdoutDropped" not in record  # the record keeps gg's tail
    result, _ = ws.shell("seq 1 5; echo oops >&2", output_lines=5)
    assert result["output"] == "2\n3\n4\n5\noops\n" and result["truncated"]  # stdout, then stderr
    result, _ = ws.shell("seq 1 3", output_lines=3)
    assert result["output"] == "1\n2\n3\n" and not result["truncated"]
    result, _ = ws.shell("seq 1 1000")  # gg's defaults: 250 lines, 4096 characters
    assert result["output"].splitlines() == [str(n) for n in range(751, 1001)] and result["truncated"]
    result, _ = ws.shell("seq 1 100", output_lines=50, output_chars=12)
    assert result["output"] == "7\n98\n99\n100\n" and result["truncated"]
    from runs.engine.tools.workspace import shell_bounds

    assert shell_bounds({"maxLines": 7, "maxChars": 9}) == {"output_lines": 7, "output_chars": 9}
    for odd in ({}, {"maxLines": "7", "maxChars": None}, {"maxLines": 0, "maxChars": True}, None):
        assert shell_bounds(odd) == {"output_lines": 250, "output_chars": 4096}


@pytest.mark.django_db
def test_max_lines_bounds_what_the_shell_tool_and_gg_shell_hand_the_model(tmp_path):
    from tests.engine_helpers import code_agent, program, run_spec

    shell = {"id": "shell", "enabled": True, "params": {"maxLines": 4}}
    data = spec([tool_agent("coder", [shell])],
                {"coder": [call("shell", command="seq 1 40"), call("finish", summary="done")]})
    run_, records = run_spec(data, tmp_path / "tool", name="tool-shell")
    assert run_.status == "completed"
    assert of_type(records, "shell")[0]["stdout"] == "".join(f"{n}\n" for n in range(1, 41))
    asked = [m["id"] for m in of_type(records, "prompt")[1]["request"] if m["source"] == "tool_output"]
    answer = [m.get("content") for m in of_type(records, "context_message") if m.get("id") in asked]
    assert answer == ["37\n38\n39\n40\n"], answer

    write = {"id": "write-file", "enabled": True}
    data = spec([code_agent("coder", [{**shell, "params": {"maxLines": 2}}, write],
                            ["shell.shell", "files.write_file", "session.finish"])],
                {"coder": [program("out = gg.shell.shell('seq 1 40')\n"
                                   "gg.files.write_file('out.txt', f'{out.output}|{out.truncated}')\n"
                                   "gg.session.finish('done')")]})
    run_, records = run_spec(data, tmp_path / "program", name="program-shell")
    assert run_.status == "completed", of_type(records, "log")
    assert (tmp_path / "program" / "ws" / "out.txt").read_text() == "39\n40\n|True"


def test_a_command_writing_many_files_is_held_to_the_quota_in_all(tmp_path):
    """Each file is held to what the quota has left (RLIMIT_FSIZE); eight of them would have held
    eight times the quota. The command is stopped once the workspace is over it."""
    quota = 64 * 1024 ** 2
    ws = Workspace(tmp_path, quota_bytes=quota)
    result, record = ws.shell("for i in 1 2 3 4 5 6 7 8; do head -c 60000000 /dev/zero > f$i; done; echo done")
    written = sum(f.stat().st_size for f in tmp_path.iterdir())
    assert result["exit_code"] is None and "done" not in result["output"]
    assert f"(killed: the workspace quota of {quota:,} bytes was exceeded" in result["output"]
    assert written < 2 * quota  # (8 x 60 MB before)
    with pytest.raises(ToolError) as spent:
        ws.write_file("more.txt", "x")
    assert spent.value.code == "limit-exceeded"


def test_a_hard_link_is_no_way_around_the_quota(tmp_path):
    """The quota counted only single-link files: `ln` after each write left a usage of 0."""
    quota = 64 * 1024 ** 2
    ws = Workspace(tmp_path, quota_bytes=quota)
    result, _ = ws.shell("for i in 1 2 3 4 5 6 7 8; do head -c 60000000 /dev/zero > f$i; ln f$i g$i; done; echo done")
    assert "done" not in result["output"] and "the workspace quota" in result["output"]
    assert sum(f.stat().st_size for f in tmp_path.glob("f*")) < 2 * quota
    assert ws.usage() == sum(f.stat().st_size for f in tmp_path.glob("f*"))  # each file once


def test_a_command_creating_files_by_the_thousand_is_held_to_the_entries_limit(tmp_path):
    """Empty files take no bytes but an inode each: a command could have used up the host's."""
    ws = Workspace(tmp_path, max_entries=5000)
    result, _ = ws.shell("mkdir d; cd d; i=0; while [ $i -lt 40000 ]; do : > f$i; i=$((i+1)); done; echo done")
    assert "done" not in result["output"]
    assert "(killed: the workspace's limit of 5,000 files and directories was exceeded" in result["output"]
    assert ws.entries() < 3 * 5000  # (40,000 before)
    with pytest.raises(ToolError) as full:
        ws.write_file("one/more.txt", "x")
    assert full.value.code == "limit-exceeded" and "5,000 files and directories" in full.value.message
