"""Walking a workspace: `files.tree` and `files.search` (the tool-calling `tree` and `search` too).

Walks list real directories and plain files only (runs.engine.tools.plain): a symlink or a hard
link in the workspace is never followed. The search query is gg's: a Rust `regex`, which is an
RE2-style linear-time engine; it runs here on google-re2 (UTF-8, Perl classes, no backreferences or
look-around — the same things Rust's regex refuses), so no query costs more than linear time per
line. Every directory, file and few thousand entries or lines the caller's clock (`Workspace.until`)
is checked, and no single call into RE2 sees more than one line, so the GIL is never held for long.
"""

import fnmatch
import os
from pathlib import Path

import re2

from runs.engine.tools.errors import ToolError
from runs.engine.tools.plain import read_plain, scan_plain

TREE_MAX_LINES = 1000
TREE_MAX_BYTES = 16 * 1024
SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT = 50, 200
SEARCH_LINE_CHARS = 200
SEARCH_FILE_BYTES = 8 * 1024 * 1024  # a file is searched up to here
SEARCH_LINE_BYTES = 1024 * 1024  # a longer line is searched up to here
CLOCK_EVERY_LINES = 2048
SKIP_DIRS = {".git", ".gg-worktrees", "node_modules", "__pycache__", ".venv"}  # the issues' worktrees


def _options():
    options = re2.Options()
    options.log_errors = False  # a bad query is the caller's error, not a line on the server's stderr
    options.max_mem = 8 << 20  # the compiled program's ceiling (Rust's regex has a size limit too)
    return options


OPTIONS = _options()


def compile_query(query):
    if not isinstance(query, str):
        raise ToolError("invalid-argument", "the query must be a string")
    try:
        return re2.compile(query, OPTIONS)
    except re2.error as exc:
        detail = exc.args[0].decode(errors="replace") if exc.args and isinstance(exc.args[0], bytes) else exc
        raise ToolError("invalid-argument", f"the query is not a regular expression: {detail}") from None


def ignored(ws):
    """The root .gitignore's name patterns (read only when it is a plain file)."""
    try:
        raw, _ = read_plain(os.path.join(ws.root, ".gitignore"), 64 * 1024)
    except ToolError:
        return []
    patterns = []
    for line in raw.decode("utf-8", errors="replace").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            patterns.append(line.rstrip("/"))
    return patterns


def _skip(name, patterns):
    return name in SKIP_DIRS or any(fnmatch.fnmatch(name, p) for p in patterns)


def tree(ws, path=None, depth=None):
    depth = 2 if depth is None else depth
    if not 1 <= depth <= 10:
        raise ToolError("invalid-argument", "depth must be between 1 and 10")
    full = ws.resolve(path, must_exist=True)
    if not full.is_dir():
        raise ToolError("invalid-argument", f"{path} is not a directory")
    patterns = ignored(ws)
    lines = [ws.relative(full) + "/"]
    size = len(lines[0])

    def walk(directory, level):
        nonlocal size
        ws.check_clock("the tree")
        dirs, files = scan_plain(directory, lambda: ws.check_clock("the tree"))
        for entry, is_dir in [(d, True) for d in dirs] + [(f, False) for f in files]:
            if _skip(entry.name, patterns):
                continue
            line = "  " * level + entry.name + ("/" if is_dir else "")
            if len(lines) >= TREE_MAX_LINES or size + len(line) > TREE_MAX_BYTES:
                raise StopIteration
            lines.append(line)
            size += len(line) + 1
            if is_dir and level < depth:
                walk(entry.path, level + 1)

    try:
        walk(full, 1)
    except StopIteration:
        lines.append("… (tree truncated)")
    return "\n".join(lines)


def _files(ws, directory, patterns):
    stack = [directory]
    while stack:
        ws.check_clock("the search")
        dirs, files = scan_plain(stack.pop(), lambda: ws.check_clock("the search"))
        stack += [d.path for d in reversed(dirs) if not _skip(d.name, patterns)]
        yield from (f.path for f in files if not _skip(f.name, patterns))


def search(ws, query, path=None, limit=None):
    limit = SEARCH_DEFAULT_LIMIT if limit is None else limit
    if not 1 <= limit <= SEARCH_MAX_LIMIT:
        raise ToolError("invalid-argument", f"limit must be between 1 and {SEARCH_MAX_LIMIT}")
    pattern = compile_query(query)
    full = ws.resolve(path, must_exist=True)
    files = [str(full)] if full.is_file() else _files(ws, str(full), ignored(ws))
    matches = []
    for file in files:
        ws.check_clock("the search")
        try:
            raw, cut = read_plain(file, SEARCH_FILE_BYTES)
            if cut:
                raw = raw[:raw.rfind(b"\n") + 1]
            raw.decode("utf-8")
        except (ToolError, UnicodeDecodeError):
            continue  # links, special files and binary files are not searched
        for number, line in enumerate(raw.splitlines(), 1):
            if number % CLOCK_EVERY_LINES == 0:
                ws.check_clock("the search")
            if pattern.search(line[:SEARCH_LINE_BYTES]):
                text = line.decode("utf-8", errors="replace")
                matches.append({"path": ws.relative(Path(file)), "line": number, "text": text[:SEARCH_LINE_CHARS]})
                if len(matches) >= limit:
                    return matches
    return matches


