"""The typed tools over a workspace, as the tool-calling loop uses them (no sandbox involved)."""

import pytest

from runs.engine.tools.errors import ToolError
from runs.engine.tools.module_stores import MAX_STORE_CHARS, BoardStore, MemoryStore, TaskStore
from runs.engine.tools.workspace import EDIT_MAX_BYTES, Workspace
from tests.gg_schema import validate_record


def test_files_are_confined_to_the_workspace(tmp_path):
    ws = Workspace(tmp_path / "ws")
    (tmp_path / "secret").write_text("no")
    (ws.root / "link").symlink_to(tmp_path / "secret")
    (ws.root / "sub").mkdir()
    (ws.root / "sub" / "out").symlink_to(tmp_path)
    (ws.root / "sub" / "in").symlink_to(ws.root / "sub")
    ws.write_file("sub/a.txt", "inside\n")
    for path in ("/etc/passwd", "../secret", "link", "sub/../../secret", "sub/out/secret", "sub/out/missing/x",
                 "missing/../../secret", "sub/in/../../secret", "a\0b"):
        with pytest.raises(ToolError) as refused:
            ws.read_file(path)
        assert refused.value.code == "invalid-argument", path
    # Symlinks and `..` that stay inside are followed; a missing path is not-found.
    for path in ("sub/a.txt", "./sub//a.txt", "sub/in/a.txt", "sub/in/../sub/a.txt", "missing/../sub/a.txt"):
        assert ws.read_file(path)[1]["contents"] == "inside\n", path
    assert ws.resolve("sub/in/a.txt") == ws.root / "sub" / "a.txt"
    assert ws.resolve("new/dir/f.txt") == ws.root / "new" / "dir" / "f.txt"
    with pytest.raises(ToolError) as missing:
        ws.read_file("new/dir/f.txt")
    assert missing.value.code == "not-found"


def test_edit_file_refuses_a_file_over_its_bound_unread(tmp_path):
    """A file of the quota's size was read, decoded and copied whole in the server (~2 GB a call)."""
    ws = Workspace(tmp_path)
    (tmp_path / "big.txt").write_bytes(b"a" * EDIT_MAX_BYTES + b"b")
    (tmp_path / "fits.txt").write_bytes(b"a" * (EDIT_MAX_BYTES - 1) + b"b")
    with pytest.raises(ToolError) as refused:
        ws.edit_file("big.txt", "b", "c")
    assert refused.value.code == "limit-exceeded" and f"over {EDIT_MAX_BYTES:,} bytes" in refused.value.message
    ws.edit_file("fits.txt", "b", "c")
    assert (tmp_path / "fits.txt").read_bytes().endswith(b"ac")


def test_edit_file_classes_a_missing_string_and_an_ambiguous_one(tmp_path):
    ws = Workspace(tmp_path)
    ws.write_file("a.txt", "x x")
    with pytest.raises(ToolError) as missing:
        ws.edit_file("a.txt", "y", "z")
    with pytest.raises(ToolError) as ambiguous:
        ws.edit_file("a.txt", "x", "z")
    assert (missing.value.code, ambiguous.value.code) == ("not-found", "conflict")


def test_shell_runs_in_the_root_with_a_timeout(tmp_path):
    ws = Workspace(tmp_path)
    result, record = ws.shell("pwd; exit 4")
    assert result["exit_code"] == 4 and result["output"].strip() == str(ws.root)
    validate_record({"type": "shell", **record})
    killed, record = ws.shell("sleep 5", timeout_secs=0.3)
    assert killed["exit_code"] is None and record["exitCode"] == -1


def test_store_snapshots_validate_against_gg_schema():
    memories, tasks, board = MemoryStore("memories-0"), TaskStore("tasks-0"), BoardStore("board-0")
    revision = memories.write({"name": "plan", "description": "d", "body": "line\n"})
    validate_record({"type": "memory_revision", **revision})
    tasks.add({"id": "t1", "title": "one"})
    tasks.add({"id": "t2", "title": "two", "blocked_by": ["t1"]})
    with pytest.raises(ToolError) as cycle:
        tasks.set_blocked_by("t1", ["t2"])
    assert cycle.value.code == "conflict"
    board.create_epic({"prefix": "auth", "title": "Auth", "description": ""})
    assert board.create_issue({"title": "login", "agent": "dev", "epic_id": "AUTH"})["id"] == "AUTH-1"
    for store in (memories, tasks, board):
        validate_record(store.snapshot())


def test_a_stores_text_is_bounded_per_field_and_in_all():
    """Issues of 40 MB each were taken whole (a server at 5.4 GB, every page seconds); tasks and
    epics alike; 609 memories of 256 KiB were 160 MB. Each text is at most 64 KiB, a store's at
    most MAX_STORE_CHARS in all, past which the call is limit-exceeded and the store unchanged."""
    board, tasks, memories = BoardStore("board-0"), TaskStore("tasks-0"), MemoryStore("memories-0")
    issue = {"title": "t", "agent": "dev", "description": "d" * 60_000}
    for bad in ({**issue, "description": "d" * 70_000}, {**issue, "in_scope": ["s" * 70_000]}):
        with pytest.raises(ToolError) as refused:
            board.create_issue(bad)
        assert refused.value.code == "limit-exceeded" and "at most 64 KiB" in refused.value.message
    with pytest.raises(ToolError) as refused:
        for _ in range(MAX_STORE_CHARS // 60_000 + 1):
            board.create_issue(issue)
    assert refused.value.code == "limit-exceeded" and "the board would hold over" in refused.value.message
    assert len(board.issues) == MAX_STORE_CHARS // 60_001
    first = next(iter(board.issues))
    with pytest.raises(ToolError):
        board.update_issue(first, {"completion_criteria": ["c" * 60_000]})
    assert board.issues[first]["completionCriteria"] == ""  # unchanged
    with pytest.raises(ToolError) as refused:
        tasks.add({"id": "t", "title": "t" * 70_000})
    assert refused.value.code == "limit-exceeded" and not tasks.tasks
    with pytest.raises(ToolError) as refused:
        for i in range(MAX_STORE_CHARS // 256_000 + 1):
            memories.write({"name": f"m{i}", "body": "b" * 256_000})
    assert refused.value.code == "limit-exceeded" and "the memories would hold over" in refused.value.message
