"""Workspace zips are unpacked safely or refused whole, with a message naming the member."""

import io
import stat
import warnings
import zipfile

import pytest

from runs.engine import run_workspace as workspace
from runs.engine.run_workspace import WorkspaceError, unpack


def make_zip(members):
    """members: [(name, data)] or [(ZipInfo, data)]."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members:
            archive.writestr(name, data)
    buffer.seek(0)
    return buffer


def symlink(name, target):
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info, target


def test_a_good_zip_unpacks_with_its_directories(tmp_path):
    unpack(make_zip([("src/app.py", "print(1)\n"), ("README.md", "hi"), ("empty/", "")]), tmp_path / "ws")
    assert (tmp_path / "ws" / "src" / "app.py").read_text() == "print(1)\n"
    assert (tmp_path / "ws" / "empty").is_dir()


@pytest.mark.parametrize("members, words", [
    ([("/etc/passwd", "x")], "absolute paths are refused"),
    ([("ok.txt", "x"), ("a/../../escape.txt", "x")], "paths with '..' are refused"),
    ([("C:/windows.txt", "x")], "absolute paths are refused"),
    ([symlink("link", "/etc/passwd")], "symlinks are refused"),
], ids=["absolute", "dotdot", "drive", "symlink"])
def test_an_unsafe_member_refuses_the_whole_zip(tmp_path, members, words):
    with pytest.raises(WorkspaceError, match=words):
        unpack(make_zip(members), tmp_path / "ws")
    assert list(tmp_path.iterdir()) == []  # nothing written, no staging left behind


def test_too_many_files_and_too_many_bytes_are_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(workspace, "MAX_FILES", 3)
    with pytest.raises(WorkspaceError, match="holds 4 files; at most 3"):
        unpack(make_zip([(f"f{i}", "x") for i in range(4)]), tmp_path / "ws")
    monkeypatch.setattr(workspace, "MAX_TOTAL_BYTES", 1024 * 1024)
    with pytest.raises(WorkspaceError, match="more than 1 MiB"):
        unpack(make_zip([("big", "0" * (2 * 1024 * 1024))]), tmp_path / "ws")
    assert list(tmp_path.iterdir()) == []


def test_a_header_that_understates_a_size_inflates_no_further(tmp_path):
    """zipfile stops at the declared size, so the declared total bounds what is written."""
    buffer = make_zip([("small", "0" * 4096)])
    data = bytearray(buffer.getvalue())
    # Rewrite the uncompressed size (local header offset 22, central directory offset 24) to 16.
    data[22:26] = (16).to_bytes(4, "little")
    central = data.rindex(b"PK\x01\x02")
    data[central + 24:central + 28] = (16).to_bytes(4, "little")
    with pytest.raises(WorkspaceError, match="could not be read"):
        unpack(io.BytesIO(bytes(data)), tmp_path / "ws")
    assert list(tmp_path.iterdir()) == []


def test_not_a_zip(tmp_path):
    with pytest.raises(WorkspaceError, match="not a zip archive"):
        unpack(io.BytesIO(b"plain text"), tmp_path / "ws")


@pytest.mark.parametrize("members, words", [
    ([("a.txt", "1"), ("a.txt", "2")], "'a.txt': collides with another member"),
    ([("a", "file"), ("a/b.txt", "x")], "'a/b.txt': collides with the file 'a'"),
    ([("d/", ""), ("d", "file")], "'d': collides with another member"),
    ([("x\\y.txt", "1"), ("x/y.txt", "2")], "collides with another member"),
    ([(".", "x")], "names no file"),
    ([("./", "")], "names no file"),
    ([("n" * 300, "x")], "over 255 bytes"),
    ([("d/" * 600 + "f", "x")], "over 1024 characters"),
], ids=["duplicate", "file-then-dir", "dir-then-file", "backslash", "dot", "dot-dir", "long-name", "long-path"])
def test_colliding_dot_and_over_long_members_are_named_errors(tmp_path, members, words):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # zipfile warns of the duplicate name it is asked to write
        buffer = make_zip(members)
    with pytest.raises(WorkspaceError, match=words):
        unpack(buffer, tmp_path / "ws")
    assert list(tmp_path.iterdir()) == []


def test_directory_entries_count_toward_the_member_limit(tmp_path, monkeypatch):
    monkeypatch.setattr(workspace, "MAX_FILES", 3)
    with pytest.raises(WorkspaceError, match="holds 5 members"):
        unpack(make_zip([(f"d{i}/", "") for i in range(5)]), tmp_path / "ws")
