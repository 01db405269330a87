"""The workspace: files confined to one root directory, and a shell run there.

Paths are relative to the root; an absolute path or one that climbs out (through `..` or a
symlink) is `invalid-argument` — the same class gg gives it.
"""

import fnmatch
import os
import re
import signal
import stat
import subprocess
import time
from pathlib import Path

from runs.engine.tools import ToolError

READ_BYTES_CEILING = 256 * 1024  # a text read stops here (byte-truncated)
SHELL_TAIL_CHARS = 16_384  # the shell telemetry record keeps this much of each stream
SHELL_OUTPUT_CHARS = 4096  # what the caller is handed (capability param maxChars' default)
DEFAULT_SHELL_TIMEOUT = 120.0
TREE_MAX_LINES = 1000
TREE_MAX_BYTES = 16 * 1024
SEARCH_DEFAULT_LIMIT, SEARCH_MAX_LIMIT = 50, 200
SEARCH_LINE_CHARS = 200
SKIP_DIRS = {".git", "node_modules", "__pycache__", ".venv"}
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}


class Workspace:
    def __init__(self, root):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._root = str(self.root)
        self._root_prefix = self._root.rstrip("/") + "/"

    # -- paths -------------------------------------------------------------------------------
    def resolve(self, path, *, must_exist=False):
        if path is None or path == "":
            path = "."
        if not isinstance(path, str):
            raise ToolError("invalid-argument", "the path must be a string")
        if os.path.isabs(path):
            raise ToolError("invalid-argument", f"{path} is absolute; paths are relative to the workspace")
        if "\0" in path:
            raise ToolError("invalid-argument", "the path contains a NUL character")
        full, exists = self._plain(path)
        if full is None:  # `..` or a symlink on the way: resolve it all and check where it lands
            full = os.path.realpath(os.path.join(self._root, path))
            if full != self._root and not full.startswith(self._root_prefix):
                raise ToolError("invalid-argument", f"{path} climbs out of the workspace")
            exists = os.path.exists(full)
        if must_exist and not exists:
            raise ToolError("not-found", f"{path} does not exist")
        return Path(full)

    def _plain(self, path):
        """(the path under the root, whether it exists) when no component is `..` or a symlink —
        one lstat per component below the (already resolved) root; (None, None) otherwise."""
        parts = [part for part in path.split("/") if part not in ("", ".")]
        full = self._root
        for i, part in enumerate(parts):
            if part == "..":
                return None, None
            full = os.path.join(full, part)
            try:
                mode = os.lstat(full).st_mode
            except OSError:  # nothing exists from here on, so nothing below can be a symlink
                rest = parts[i + 1:]
                return (None, None) if ".." in rest else (os.path.join(full, *rest), False)
            if stat.S_ISLNK(mode):
                return None, None
        return full, True

    def relative(self, full):
        rel = full.relative_to(self.root).as_posix()
        return rel or "."

    # -- files -------------------------------------------------------------------------------
    def read_file(self, path, offset=None, limit=None):
        """A file's lines [offset, offset+limit) (1-based offset), or an image's description."""
        full = self.resolve(path, must_exist=True)
        if full.is_dir():
            raise ToolError("invalid-argument", f"{path} is a directory; list it instead")
        if offset is not None and offset < 1:
            raise ToolError("invalid-argument", "offset counts lines from 1")
        if limit is not None and limit < 1:
            raise ToolError("invalid-argument", "limit must be at least 1")
        media = IMAGE_TYPES.get(full.suffix.lower())
        if media:
            return ("image", {"media_type": media, "label": path, "bytes": full.stat().st_size, "shown": False,
                              "not_shown_reason": "this model is not shown images"})
        return ("text", self.read_text(full, offset, limit))

    def read_text(self, full, offset=None, limit=None):
        try:
            raw = full.read_bytes()
        except OSError as exc:
            raise ToolError("io-error", f"{self.relative(full)} could not be read: {exc.strerror}") from None
        truncated = len(raw) > READ_BYTES_CEILING
        text = raw[:READ_BYTES_CEILING].decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        total = len(lines)
        first = offset or 1
        if total and first > total:
            raise ToolError("invalid-argument", f"offset {first} is past the end ({total} lines)")
        chosen = lines[first - 1:(first - 1 + limit) if limit else None]
        return {"contents": "".join(chosen), "first_line": first if chosen else 0,
                "last_line": first + len(chosen) - 1 if chosen else 0, "total_lines": total,
                "byte_truncated": truncated}

    def write_file(self, path, contents):
        full = self.resolve(path)
        if full.is_dir():
            raise ToolError("invalid-argument", f"{path} is a directory")
        data = contents.encode("utf-8")
        try:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_bytes(data)
        except OSError as exc:
            raise ToolError("io-error", f"{path} could not be written: {exc.strerror}") from None
        return len(data)

    def edit_file(self, path, old_string, new_string):
        full = self.resolve(path, must_exist=True)
        if not old_string:
            raise ToolError("invalid-argument", "the string to replace is empty")
        text = full.read_text(encoding="utf-8", errors="replace")
        count = text.count(old_string)
        if count == 0:
            raise ToolError("not-found", f"the string to replace does not occur in {path}")
        if count > 1:
            raise ToolError("conflict", f"the string to replace matched {count} times in {path}")
        full.write_text(text.replace(old_string, new_string, 1), encoding="utf-8")

    def list_dir(self, path=None):
        full = self.resolve(path, must_exist=True)
        if not full.is_dir():
            raise ToolError("invalid-argument", f"{path} is not a directory")
        entries = []
        for child in sorted(full.iterdir(), key=lambda p: p.name):
            kind = "directory" if child.is_dir() else "file" if child.is_file() else "other"
            entries.append({"name": child.name, "kind": kind})
        return entries

    def _ignored(self):
        patterns = []
        ignore = self.root / ".gitignore"
        if ignore.is_file():
            for line in ignore.read_text(errors="replace").splitlines():
                line = line.strip()
                if line and not line.startswith("#"):
                    patterns.append(line.rstrip("/"))
        return patterns

    def _skip(self, name, patterns):
        return name in SKIP_DIRS or any(fnmatch.fnmatch(name, p) for p in patterns)

    def tree(self, path=None, depth=None):
        depth = 2 if depth is None else depth
        if not 1 <= depth <= 10:
            raise ToolError("invalid-argument", "depth must be between 1 and 10")
        full = self.resolve(path, must_exist=True)
        patterns = self._ignored()
        lines = [self.relative(full) + "/"]
        size = len(lines[0])

        def walk(directory, level):
            nonlocal size
            for child in sorted(directory.iterdir(), key=lambda p: (not p.is_dir(), p.name)):
                if self._skip(child.name, patterns):
                    continue
                line = "  " * level + child.name + ("/" if child.is_dir() else "")
                if len(lines) >= TREE_MAX_LINES or size + len(line) > TREE_MAX_BYTES:
                    raise StopIteration
                lines.append(line)
                size += len(line) + 1
                if child.is_dir() and level < depth:
                    walk(child, level + 1)

        try:
            walk(full, 1)
        except StopIteration:
            lines.append("… (tree truncated)")
        return "\n".join(lines)

    def search(self, query, path=None, limit=None):
        limit = SEARCH_DEFAULT_LIMIT if limit is None else limit
        if not 1 <= limit <= SEARCH_MAX_LIMIT:
            raise ToolError("invalid-argument", f"limit must be between 1 and {SEARCH_MAX_LIMIT}")
        try:
            pattern = re.compile(query)
        except re.error as exc:
            raise ToolError("invalid-argument", f"the query is not a regular expression: {exc}") from None
        full = self.resolve(path, must_exist=True)
        patterns = self._ignored()
        files = [full] if full.is_file() else self._walk_files(full, patterns)
        matches = []
        for file in files:
            try:
                text = file.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            for number, line in enumerate(text.splitlines(), 1):
                if pattern.search(line):
                    matches.append({"path": self.relative(file), "line": number, "text": line[:SEARCH_LINE_CHARS]})
                    if len(matches) >= limit:
                        return matches
        return matches

    def _walk_files(self, directory, patterns):
        for dirpath, dirnames, filenames in os.walk(directory):
            dirnames[:] = sorted(d for d in dirnames if not self._skip(d, patterns))
            for name in sorted(filenames):
                if not self._skip(name, patterns):
                    yield Path(dirpath) / name

    # -- shell -------------------------------------------------------------------------------
    def shell(self, command, timeout_secs=None, *, output_chars=SHELL_OUTPUT_CHARS):
        """Run `sh -c command` in the root. Returns (result, record): the caller's
        {exit_code, output, truncated} and the `shell` telemetry fields (stream.md §4.9)."""
        if not isinstance(command, str) or not command.strip():
            raise ToolError("invalid-argument", "the command is empty")
        timeout = DEFAULT_SHELL_TIMEOUT if timeout_secs is None else float(timeout_secs)
        if timeout <= 0:
            raise ToolError("invalid-argument", "the timeout must be positive")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root), "LANG": "C.UTF-8"}
        started = time.monotonic()
        proc = subprocess.Popen(["sh", "-c", command], cwd=self.root, stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
            exit_code = proc.returncode
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            exit_code = None
        stdout = out.decode("utf-8", errors="replace")
        stderr = err.decode("utf-8", errors="replace")
        combined = stdout + stderr
        if exit_code is None:
            combined += f"\n(killed after {timeout:g} s)"
        truncated = len(combined) > output_chars
        record = {"origin": "program", "command": command, "cwd": {"type": "workspace"},
                  "exitCode": -1 if exit_code is None or exit_code < 0 else exit_code,
                  "stdout": stdout[-SHELL_TAIL_CHARS:], "stderr": stderr[-SHELL_TAIL_CHARS:]}
        if len(stdout) > SHELL_TAIL_CHARS:
            record["stdoutDropped"] = len(stdout) - SHELL_TAIL_CHARS
        if len(stderr) > SHELL_TAIL_CHARS:
            record["stderrDropped"] = len(stderr) - SHELL_TAIL_CHARS
        result = {"exit_code": exit_code, "output": combined[-output_chars:], "truncated": truncated,
                  "duration_ms": int((time.monotonic() - started) * 1000)}
        return result, record
