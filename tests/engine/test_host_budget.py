"""A program's wall-clock budget holds its host calls too. A hostile review's listing of a 124,000-entry
directory and its 200 MB write ran to ~62 s of a 30 s budget beside other runs: the epoch stops guest
code only, and the host work ran on. Now a call's host work looks at the program's clock (listings,
walks, the quota's walk, writes in chunks) and stops a moment before the deadline so that the program
meets the call's limit-exceeded error; a listing is bounded, since handing it on is not clocked; and
the epoch counts the time that passed, not the ticker's wakes."""

import os
import threading
import time

import pytest

from runs.engine.tools.errors import ToolError
from runs.engine.tools.workspace import Workspace
from tests.engine_helpers import call, of_type, run_spec, spec, tool_agent
from tests.sandbox_run import context, run

pytestmark = pytest.mark.usefixtures("guest")


def _entries(directory, count):
    directory.mkdir(parents=True)
    for i in range(count):
        os.close(os.open(directory / f"f{i:06d}", os.O_CREAT | os.O_WRONLY, 0o644))


def test_a_call_cut_at_the_budget_reaches_the_program_as_limit_exceeded(tmp_path):
    """Before, the search stopped at the deadline itself and the epoch stopped the program the moment
    it resumed: the model read that the sandbox stopped it, never which call ran out or why."""
    ctx = context(tmp_path, capabilities=["search"], timeout_secs=1)
    (ctx[0].workspace.root / "lines.txt").write_text("a\n" * 4_000_000)  # ~3 s to search, alone
    started = time.monotonic()
    result = run(ctx, """
        import gg
        gg.files.search("b", None, 1)
    """)
    assert time.monotonic() - started < 1.3
    assert result.outcome.error_type == "program_api_error", result.outcome.error
    assert result.outcome.error.endswith("gg.core.ApiError: `search` failed (limit-exceeded): the search was cut "
                                         "short: the program's wall-clock budget of 1 s ran out")


def test_a_listing_too_long_to_hand_on_is_refused_within_the_budget(tmp_path):
    """Before, 124,000 entries reached a 2 s program after 4.8 s alone (2.2 s of it writing the result
    for the guest, after the listing) and after ~8 s beside three more; 40,000 here took ~1.5 s of 0.5 s."""
    ctx = context(tmp_path, capabilities=["list-dir"], timeout_secs=0.5)
    _entries(ctx[0].workspace.root / "many", 40_000)
    started = time.monotonic()
    result = run(ctx, """
        import gg
        gg.files.list_dir("many")
    """)
    assert time.monotonic() - started < 0.5 + 0.3
    assert result.outcome.error.endswith("gg.core.ApiError: `list_dir` failed (limit-exceeded): a listing holds at "
                                         "most 10,000 entries, and many holds more"), result.outcome.error


def test_a_write_cut_short_leaves_the_workspace_as_it_was(tmp_path):
    ws = Workspace(tmp_path)
    ws.write_file("kept.txt", "old contents\n")
    before = ws.usage(), ws.entries()
    big = "x" * (256 * 1024 * 1024)  # written in 4 MiB chunks, ~0.4 s alone
    for path in ("kept.txt", "new/dir/big.txt"):
        started = time.monotonic()
        with ws.until(time.monotonic() + 0.05, "the test's budget of 0.05 s"), pytest.raises(ToolError) as cut:
            ws.write_file(path, big)
        assert time.monotonic() - started < 0.3
        assert cut.value.code == "limit-exceeded"
        assert cut.value.message == (f"the write was cut short: the test's budget of 0.05 s ran out; {path} is as it "
                                     f"was before the call")
    assert (tmp_path / "kept.txt").read_text() == "old contents\n" and not (tmp_path / "new/dir/big.txt").exists()
    assert sorted(os.listdir(tmp_path)) == ["kept.txt", "new"]  # no partial file; the directories made stay
    assert (ws.usage(), ws.entries()) == (before[0], before[1] + 2)
    ws._usage = None  # what the workspace counted is what a walk finds
    assert (ws.usage(), ws.entries()) == (before[0], before[1] + 2)


def test_the_budget_holds_beside_busy_threads(tmp_path):
    """The epoch ticker needs the GIL to wake: beside two busy threads (other runs' host work) it woke
    late, and a 1 s program spinning in guest code ran ~4 s."""
    stop = threading.Event()

    def busy():
        while not stop.is_set():
            sum(range(100))

    threads = [threading.Thread(target=busy) for _ in range(2)]
    for thread in threads:
        thread.start()
    try:
        started = time.monotonic()
        result = run(context(tmp_path, timeout_secs=1), "while True: pass")
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        for thread in threads:
            thread.join()
    assert result.outcome.error_type == "sandbox_timeout" and elapsed < 1.8, elapsed


@pytest.mark.django_db
def test_a_tool_call_is_bounded_alike_and_names_the_runs_limit(tmp_path):
    """The tool-calling path reaches the same workspace under the run's wall clock (maxRuntimeSecs)."""
    _entries(tmp_path / "ws" / "many", 12_000)
    data = spec([tool_agent("coder", [{"id": "list-dir", "enabled": True}, {"id": "search", "enabled": True},
                                      {"id": "shell", "enabled": True}])],
                {"coder": [call("list_dir", path="many"),
                           {"toolCalls": [{"name": "shell", "args": {"command": "sleep 5"}},  # one reply: no turn
                                          {"name": "search", "args": {"query": "b"}}]},  # boundary between
                           call("finish", summary="done")]},
                limits={"maxTurns": 10, "maxRuntimeSecs": 1})
    run, records = run_spec(data, tmp_path)
    results = {r["name"]: r for r in of_type(records, "tool_result")}
    assert results["list_dir"]["failure"] == "limit-exceeded"
    assert results["list_dir"]["summary"] == "a listing holds at most 10,000 entries, and many holds more"
    assert results["shell"]["ok"]  # killed at the run's deadline, its output handed back
    assert results["search"]["failure"] == "limit-exceeded"
    assert results["search"]["summary"] == "the search was cut short: the run's wall-clock limit of 1 s ran out"
    assert run.status == "timed_out"
