"""Confinement without exceptions (issue 19): links already in a workspace get nowhere through
the walks, the search, the tree, skills or skill code modules; writes are held to the quota; the
search is linear-time and bounded by the caller's clock."""

import os
import time

import pytest

from runs.engine.tools.errors import ToolError
from runs.engine.tools.skills import SkillLibrary
from runs.engine.tools.workspace import Workspace
from tests.sandbox_run import context, run

SECRET = "top-secret-line"


@pytest.fixture
def outside(tmp_path):
    """A secret file outside the workspace, and a workspace seeded with links to it."""
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET + "\n")
    (tmp_path / "secret-dir").mkdir()
    (tmp_path / "secret-dir" / "SKILL.md").write_text(SECRET + "\n")
    (tmp_path / "secret-dir" / "evil.py").write_text(f"LEAK = {SECRET!r}\n")
    ws = Workspace(tmp_path / "ws")
    root = ws.root
    (root / "plain.txt").write_text("a plain line\n")
    os.symlink(secret, root / "link.txt")
    os.link(secret, root / "hard.txt")
    os.symlink(tmp_path / "secret-dir", root / "linked-dir")
    skills = root / ".gg" / "skills"
    skills.mkdir(parents=True)
    os.symlink(tmp_path / "secret-dir", skills / "evil")  # skills.read_skill("evil") returned /etc/passwd
    (skills / "half").mkdir()
    os.symlink(secret, skills / "half" / "SKILL.md")
    (skills / "code").mkdir()
    (skills / "code" / "SKILL.md").write_text("# code\nA code skill.\n")
    os.link(tmp_path / "secret-dir" / "evil.py", skills / "code" / "mod.py")
    (skills / "fine").mkdir()
    (skills / "fine" / "SKILL.md").write_text("# fine\nA fine skill.\n")
    return ws


def test_search_and_tree_follow_no_link(outside):
    assert [m["path"] for m in outside.search("line")] == ["plain.txt"]
    assert outside.search(SECRET) == []
    names = {line.strip().rstrip("/") for line in outside.tree(depth=4).splitlines()}
    assert {"plain.txt", "skills", "code", "fine", "SKILL.md"} <= names
    assert not names & {"link.txt", "hard.txt", "linked-dir", "evil", "mod.py"}


def test_reads_and_writes_refuse_links_out(outside):
    for path in ("link.txt", "hard.txt", "linked-dir/SKILL.md"):
        with pytest.raises(ToolError) as refused:
            outside.read_file(path)
        assert refused.value.code == "invalid-argument", path
    with pytest.raises(ToolError) as refused:
        outside.write_file("hard.txt", "overwritten")
    assert refused.value.code == "invalid-argument" and "hard link" in refused.value.message
    assert (outside.root.parent / "secret.txt").read_text() == SECRET + "\n"
    kinds = {e["name"]: e["kind"] for e in outside.list_dir()}
    assert kinds["link.txt"] == "other" and kinds["linked-dir"] == "other"


def test_a_fifo_does_not_block_a_read(outside):
    os.mkfifo(outside.root / "pipe")
    with pytest.raises(ToolError) as refused:
        outside.read_file("pipe")
    assert "not a regular file" in refused.value.message
    assert outside.search("x") == []


def test_skills_and_code_modules_follow_no_link(outside):
    library = SkillLibrary("skills-0", outside.root)
    assert [s["name"] for s in library.skills()] == ["code", "fine"]
    for name in ("evil", "half", "..", ".", "", "code/../evil"):
        with pytest.raises(ToolError) as missing:
            library.read(name)
        assert missing.value.code == "not-found"
    assert library.code_module("code") is None and library.code_module("evil") is None
    assert SECRET not in str(library.snapshot())
    escaped = SkillLibrary("skills-1", outside.root, "../secret-dir/..")
    assert escaped.skills() == [] and SkillLibrary("skills-2", outside.root, "/etc").skills() == []
    os.symlink(outside.root.parent / "secret-dir", outside.root / ".gg" / "other")
    assert SkillLibrary("skills-3", outside.root, ".gg/other").skills() == []


def test_the_quota_holds_writes_and_edits(tmp_path):
    ws = Workspace(tmp_path, quota_bytes=1000)
    ws.write_file("a.txt", "x" * 600)
    with pytest.raises(ToolError) as spent:
        ws.write_file("b.txt", "y" * 500)
    assert spent.value.code == "limit-exceeded" and not (tmp_path / "b.txt").exists()
    ws.write_file("a.txt", "x" * 900)  # replacing a file charges only the difference
    with pytest.raises(ToolError):
        ws.edit_file("a.txt", "x" * 900, "z" * 1001)
    assert ws.usage() == 900


def test_the_search_is_linear_and_speaks_gg_regex(tmp_path):
    ws = Workspace(tmp_path)
    ws.write_file("a.txt", ("a" * 40 + "b\n") * 2000)
    started = time.monotonic()
    assert ws.search("(a+)+$") == []
    assert time.monotonic() - started < 2  # Python's re takes minutes on one such line
    assert ws.search(r"(?i)A{40}B", limit=2)[0]["line"] == 1
    for query in (r"(a)\1", "(?=a)", "(", "x{99999}"):
        with pytest.raises(ToolError) as bad:
            ws.search(query)
        assert bad.value.code == "invalid-argument", query


def test_host_work_stops_at_the_callers_deadline(tmp_path):
    ws = Workspace(tmp_path)
    ws.write_file("a.txt", "a\n" * 10_000)
    for i in range(1500):
        ws.write_file(f"d/{i}", "")
    with ws.until(time.monotonic() - 1, "the test's budget"):
        for call in (lambda: ws.search("a"), lambda: ws.tree(), lambda: ws.shell("true"), lambda: ws.list_dir("d"),
                     lambda: ws.write_file("b.txt", "b" * (5 * 1024 * 1024))):
            with pytest.raises(ToolError) as late:
                call()
            assert late.value.code == "limit-exceeded" and "the test's budget" in late.value.message
    assert ws.deadline is None and len(ws.search("a")) == 50


def test_a_program_is_told_of_the_link_it_cannot_follow(outside, tmp_path):
    ctx = context(tmp_path, capabilities=["read-file", "search", "skills"])
    ctx[0].workspace = outside
    ctx[0].stores["skills"] = SkillLibrary("skills-0", outside.root)
    result = run(ctx, """
        import gg
        hits = gg.files.search("secret")
        gg.views.open_text("hits", str(len(hits)))
        gg.skills.read_skill("evil")
    """)
    assert result.outcome.views[0].body == "0" and "not-found" in result.outcome.error
    assert SECRET not in str(result.records)


@pytest.mark.parametrize("path", ["x" * 256, "a/" + "y" * 300 + "/b", "/".join(["d"] * 2100)])
def test_a_name_or_path_past_linuxs_bounds_is_an_invalid_argument_naming_no_host_path(tmp_path, path):
    """ENAMETOOLONG failed deep in the call: 'gg failed: [Errno 36] ... /var/workspaces/23/xxx'."""
    ws = Workspace(tmp_path / "ws")
    for call in (lambda: ws.write_file(path, "x"), lambda: ws.read_file(path), lambda: ws.list_dir(path)):
        with pytest.raises(ToolError) as refused:
            call()
        assert refused.value.code == "invalid-argument" and str(tmp_path) not in refused.value.message
    ws.write_file("x" * 255, "fits")  # a name of 255 bytes is one
    result = run(context(tmp_path, capabilities=["write-file"]), f"import gg\ngg.files.write_file({path!r}, 'x')")
    failed = result.of("api_result")[0]
    assert failed["failure"] == "invalid-argument" and not result.outcome.ok
