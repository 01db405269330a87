"""The workspace: files confined to one root directory, and a shell run there.

Paths are relative to the root; an absolute path or one that climbs out (through `..` or a
symlink) is `invalid-argument` — the same class gg gives it. Files are read and written only when
they are plain single-link regular files (runs.engine.tools.plain), walks never follow a link, the
shell runs confined (runs.engine.tools.confined), and writes are held to the run's quota.

Host work is bounded by the caller's clock: `with workspace.until(deadline, budget):` makes
listings, walks, searches and writes stop with `limit-exceeded` naming `budget` once the monotonic
`deadline` passes (checked every few thousand entries or every chunk written), and clamps a
shell's timeout to it; `interrupt` (set by the engine: a cancel, the run's wall clock) stops a
running shell.
"""

import contextlib
import os
import stat
import tempfile
import time
from operator import itemgetter
from pathlib import Path

from django.conf import settings

from runs.engine.tools.errors import ToolError
from runs.engine.tools.confined import ConfinementUnavailable, DiskWatch, Limits, run_confined
from runs.engine.tools import walks
from runs.engine.tools.plain import listing, read_plain, refusal

READ_BYTES_CEILING = 256 * 1024  # a text read stops here (byte-truncated)
SHELL_TAIL_CHARS = 16_384  # the shell telemetry record keeps this much of each stream
SHELL_OUTPUT_CHARS = 4096  # what the caller is handed (capability param maxChars' default)
SHELL_OUTPUT_LINES = 250  # ... and at most this many of its last lines (capability param maxLines' default)
DEFAULT_SHELL_TIMEOUT = 120.0
EDIT_MAX_BYTES = 16 * 1024 * 1024  # edit_file reads, decodes and rewrites a file whole
WRITE_CHUNK_BYTES = 4 * 1024 * 1024  # a write looks at the clock between two chunks
# A listing's entries are handed on after the clock stops looking (a program's result, ~20 µs an entry;
# a tool's JSON): 124,000 of them took 2.2 s to hand to a program alone, and longer beside other runs.
LIST_MAX_ENTRIES = 10_000
DEFAULT_QUOTA_BYTES, DEFAULT_MAX_ENTRIES = 1024 ** 3, 250_000
# A shell command's workspace is measured again (a walk) each time its filesystem has gained what the
# quota had left, in bytes or in entries (inodes), or this much where that is less (confined.DiskWatch).
SHELL_SLACK = (16 * 1024 ** 2, 1000)
NAME_MAX, PATH_MAX = 255, 4096  # Linux's: a longer name failed deep in the call (ENAMETOOLONG, a host path in it)
IMAGE_TYPES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
               ".webp": "image/webp"}


def shell_bounds(params) -> dict:
    """The shell capability's params as `Workspace.shell`'s bounds: ``maxChars`` and ``maxLines``,
    each its default unless a positive whole number."""
    def positive(name, default):
        value = params.get(name) if isinstance(params, dict) else None
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else default
    return {"output_chars": positive("maxChars", SHELL_OUTPUT_CHARS),
            "output_lines": positive("maxLines", SHELL_OUTPUT_LINES)}


def _setting(name, default):
    try:
        return int(getattr(settings, name, default))
    except Exception:  # used outside Django too (bench, the run_program command's tests)
        return default


class Workspace:
    def __init__(self, root, *, quota_bytes=None, max_entries=None):
        self.root = Path(root).resolve()
        self.root.mkdir(parents=True, exist_ok=True)
        self._root = str(self.root)
        self._root_prefix = self._root.rstrip("/") + "/"
        self.quota_bytes = _setting("GG_WORKSPACE_QUOTA_BYTES", DEFAULT_QUOTA_BYTES) if quota_bytes is None \
            else quota_bytes
        self.max_entries = _setting("GG_WORKSPACE_MAX_ENTRIES", DEFAULT_MAX_ENTRIES) if max_entries is None \
            else max_entries
        self._usage = None  # (bytes of the regular files, entries) under the root; None until measured
        self.deadline = None  # monotonic time after which host work stops (see until())
        self.budget = "the wall-clock budget"  # what the deadline ends, as the error names it
        self.interrupt = None  # () -> None | reason: a running shell is killed when it gives a reason

    # -- the caller's clock ------------------------------------------------------------------
    @contextlib.contextmanager
    def until(self, deadline, budget):
        """Bound the host work done inside the block by `deadline` as well, the end of `budget` (the
        earlier one holds; the outer bound is back when the block ends)."""
        outer = self.deadline, self.budget
        if self.deadline is None or deadline < self.deadline:
            self.deadline, self.budget = deadline, budget
        try:
            yield
        finally:
            self.deadline, self.budget = outer

    def check_clock(self, what):
        if self.deadline is not None and time.monotonic() > self.deadline:
            raise ToolError("limit-exceeded", f"{what} was cut short: {self.budget} ran out")

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
        if len(path.encode(errors="replace")) > PATH_MAX or any(
                len(part.encode(errors="replace")) > NAME_MAX for part in path.split("/")):
            raise ToolError("invalid-argument", f"a path is at most {PATH_MAX:,} bytes, a name in it {NAME_MAX}")
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
            problem = refusal(os.lstat(full), path)
            if problem:
                raise ToolError("invalid-argument", problem)
            return ("image", {"media_type": media, "label": path, "bytes": full.stat().st_size, "shown": False,
                              "not_shown_reason": "this model is not shown images"})
        return ("text", self.read_text(full, offset, limit))

    def read_text(self, full, offset=None, limit=None):
        raw, truncated = read_plain(full, READ_BYTES_CEILING, self.relative(full))
        text = raw.decode("utf-8", errors="replace")
        lines = text.splitlines(keepends=True)
        total = len(lines)
        first = offset or 1
        if total and first > total:
            raise ToolError("invalid-argument", f"offset {first} is past the end ({total} lines)")
        chosen = lines[first - 1:(first - 1 + limit) if limit else None]
        return {"contents": "".join(chosen), "first_line": first if chosen else 0,
                "last_line": first + len(chosen) - 1 if chosen else 0, "total_lines": total,
                "byte_truncated": truncated}

    def _writable(self, full, path):
        """The lstat of the plain file at `full` (None when there is none); ToolError for anything else."""
        try:
            st = os.lstat(full)
        except FileNotFoundError:
            return None
        if stat.S_ISDIR(st.st_mode):
            raise ToolError("invalid-argument", f"{path} is a directory")
        problem = refusal(st, path)
        if problem:
            raise ToolError("invalid-argument", problem)
        return st

    def _store(self, full, path, data):
        """Write `data` to a new file beside `full`, in chunks with the clock looked at between two, and
        rename it over `full` once whole: a write cut short (the clock, a full disk) leaves `full` as it
        was, only the directories it created standing (empty)."""
        st = self._writable(full, path)
        old = st.st_size if st else 0
        created = 0 if st else _missing(full)
        self.charge(len(data) - old, created)
        partial = None
        try:
            full.parent.mkdir(parents=True, exist_ok=True)
            fd, partial = tempfile.mkstemp(prefix=".gg-write-", dir=full.parent)
            with os.fdopen(fd, "wb") as out:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) if st else 0o644)  # a replaced file keeps its mode
                chunks = memoryview(data)
                for start in range(0, len(data), WRITE_CHUNK_BYTES):
                    if start:
                        self.check_clock("the write")
                    out.write(chunks[start:start + WRITE_CHUNK_BYTES])
            os.replace(partial, full)
        except OSError as exc:
            self._discard(partial)
            self._usage = None
            raise ToolError("io-error", f"{path} could not be written: {exc.strerror}") from None
        except ToolError as exc:  # the clock
            self._discard(partial)
            if self._usage is not None and created:  # the file is not there; the directories above it are
                self._usage = (self._usage[0], self._usage[1] + created - 1)
            raise ToolError(exc.code, f"{exc.message}; {path} is as it was before the call") from None
        if self._usage is not None:
            self._usage = (self._usage[0] + len(data) - old, self._usage[1] + created)

    @staticmethod
    def _discard(partial):
        if partial is not None:
            with contextlib.suppress(OSError):
                os.unlink(partial)

    def write_file(self, path, contents):
        full = self.resolve(path)
        data = contents.encode("utf-8")
        self._store(full, path, data)
        return len(data)

    def edited(self, path, old_string, new_string):
        """(the file's full path, its text with the one `old_string` replaced): what edit_file writes,
        refused as it refuses it. A file over EDIT_MAX_BYTES is refused unread: one of the quota's
        1 GiB was read, decoded and copied whole in the server (~2 GB a call)."""
        full = self.resolve(path, must_exist=True)
        if not old_string:
            raise ToolError("invalid-argument", "the string to replace is empty")
        raw, over = read_plain(full, EDIT_MAX_BYTES, path)
        if over:
            raise ToolError("limit-exceeded", f"{path} is over {EDIT_MAX_BYTES:,} bytes, the most edit_file "
                                              "rewrites (a shell command can edit it)")
        text = raw.decode("utf-8", errors="replace")
        count = text.count(old_string)
        if count == 0:
            raise ToolError("not-found", f"the string to replace does not occur in {path}")
        if count > 1:
            raise ToolError("conflict", f"the string to replace matched {count} times in {path}")
        return full, text.replace(old_string, new_string, 1)

    def edit_file(self, path, old_string, new_string):
        full, text = self.edited(path, old_string, new_string)
        self._store(full, path, text.encode("utf-8"))

    def list_dir(self, path=None):
        full = self.resolve(path, must_exist=True)
        if not full.is_dir():
            raise ToolError("invalid-argument", f"{path} is not a directory")
        entries = []
        for child in listing(full, lambda: self.check_clock("the listing")):
            if len(entries) == LIST_MAX_ENTRIES:
                raise ToolError("limit-exceeded", f"a listing holds at most {LIST_MAX_ENTRIES:,} entries, and "
                                                  f"{self.relative(full)} holds more")
            kind = ("directory" if child.is_dir(follow_symlinks=False) else
                    "file" if child.is_file(follow_symlinks=False) else "other")  # a link is "other"
            entries.append({"name": child.name, "kind": kind})
        entries.sort(key=itemgetter("name"))
        return entries

    def tree(self, path=None, depth=None):
        return walks.tree(self, path, depth)

    def search(self, query, path=None, limit=None):
        return walks.search(self, query, path, limit)

    # -- the quota ---------------------------------------------------------------------------
    def usage(self):
        """Bytes of the regular files under the root."""
        return self._measured()[0]

    def entries(self):
        """Files, directories and links under the root: each holds one of the filesystem's inodes."""
        return self._measured()[1]

    def _measured(self, check=None):
        """(bytes, entries), measured once and then kept up to date. A regular file's bytes count once
        whatever its links (a shell's `ln` after each write had taken a workspace 480 MB past a 64 MiB
        quota with a usage of 0). `check` stops the measuring walk (see plain.listing)."""
        if self._usage is None:
            total, entries, linked, stack = 0, 0, set(), [self._root]
            while stack:
                try:
                    found = list(listing(stack.pop(), check))
                except OSError:
                    continue
                entries += len(found)
                for entry in found:
                    try:
                        st = entry.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        stack.append(entry.path)
                    elif stat.S_ISREG(st.st_mode):
                        if st.st_nlink > 1:
                            if st.st_ino in linked:
                                continue
                            linked.add(st.st_ino)
                        total += st.st_size
            self._usage = (total, entries)
        return self._usage

    def charge(self, delta, created=0):
        self._measured(lambda: self.check_clock("measuring the workspace"))  # a walk of it, when unknown
        if delta > 0 and self.usage() + delta > self.quota_bytes:
            raise ToolError("limit-exceeded", f"the workspace quota of {self.quota_bytes:,} bytes would be exceeded "
                                              f"({self.usage():,} bytes are in use)")
        if created and self.entries() + created > self.max_entries:
            raise ToolError("limit-exceeded", f"the workspace's limit of {self.max_entries:,} files and directories "
                                              f"would be exceeded ({self.entries():,} are there)")

    def _check(self):
        """While a shell command runs: why it must stop, if its writes took the workspace past a
        limit; else how much more it may write before it is measured again (confined.DiskWatch)."""
        self._usage = None
        used, entries = self._measured()
        if used > self.quota_bytes:
            return f"the workspace quota of {self.quota_bytes:,} bytes was exceeded ({used:,} bytes in use)", None
        if entries > self.max_entries:
            return (f"the workspace's limit of {self.max_entries:,} files and directories was exceeded "
                    f"({entries:,} are there)"), None
        return None, self._allowance()

    def _allowance(self):
        used, entries = self._measured()
        return max(self.quota_bytes - used, SHELL_SLACK[0]), max(self.max_entries - entries, SHELL_SLACK[1])

    # -- shell -------------------------------------------------------------------------------
    def shell(self, command, timeout_secs=None, *, output_chars=SHELL_OUTPUT_CHARS, output_lines=SHELL_OUTPUT_LINES):
        """Run `sh -c command` confined to the root (runs.engine.tools.confined). Returns (result,
        record): the caller's {exit_code, output, truncated} — the output's last `output_lines`
        lines, of those the last `output_chars` characters — and the `shell` telemetry fields
        (stream.md §4.9, each stream's tail before that cut). Refused (`unavailable`) where the
        shell cannot be confined."""
        if not isinstance(command, str) or not command.strip():
            raise ToolError("invalid-argument", "the command is empty")
        if "\0" in command:
            raise ToolError("invalid-argument", "the command contains a NUL character")
        timeout = DEFAULT_SHELL_TIMEOUT if timeout_secs is None else float(timeout_secs)
        if not timeout > 0:
            raise ToolError("invalid-argument", "the timeout must be positive")
        if self.deadline is not None:
            timeout = min(timeout, self.deadline - time.monotonic())
            if timeout <= 0:
                raise ToolError("limit-exceeded", f"{self.budget} is spent")
        watch = DiskWatch(self._root, self._allowance(), self._check)
        limits = Limits(file_bytes=max(0, self.quota_bytes - self.usage()))
        try:
            done = run_confined(command, self._root, timeout, interrupt=self.interrupt, watch=watch, limits=limits,
                                tail_chars=max(SHELL_TAIL_CHARS, output_chars))
        except ConfinementUnavailable as exc:
            raise ToolError("unavailable", str(exc)) from None
        except OSError as exc:
            raise ToolError("io-error", f"the shell could not be started: {exc.strerror}") from None
        self._usage = None  # the command may have written anything: measured again when next needed
        killed = None
        if done.stopped == "timeout":
            killed = f"killed after {timeout:g} s"
        elif done.stopped:
            killed = f"killed: {done.stopped}"
        combined = done.stdout + done.stderr + (f"\n({killed})" if killed else "")
        truncated = done.stdout_chars + done.stderr_chars > len(done.stdout) + len(done.stderr)
        lines = combined.splitlines(keepends=True)
        if len(lines) > output_lines:
            combined, truncated = "".join(lines[-output_lines:]), True
        truncated = truncated or len(combined) > output_chars
        record = {"origin": "program", "command": command, "cwd": {"type": "workspace"},
                  "exitCode": -1 if done.exit_code is None else done.exit_code,
                  "stdout": done.stdout[-SHELL_TAIL_CHARS:], "stderr": done.stderr[-SHELL_TAIL_CHARS:]}
        for name, chars in (("stdoutDropped", done.stdout_chars), ("stderrDropped", done.stderr_chars)):
            if chars > SHELL_TAIL_CHARS:
                record[name] = chars - SHELL_TAIL_CHARS
        result = {"exit_code": done.exit_code, "output": combined[-output_chars:], "truncated": truncated,
                  "duration_ms": done.duration_ms, "killed": killed}
        return result, record


def shell_records(result, record):
    """(type, fields) of the records a command leaves: its `shell` record and, when it was killed,
    a warn log saying why (the record's schema has no field for it; its exitCode -1 does not say)."""
    yield "shell", record
    if result["killed"]:
        yield "log", {"level": "warn", "message": f"the shell command was {result['killed']}"}


def _missing(full):
    """The entries writing a file at `full` creates: the file and each missing directory above it."""
    count, parent = 1, full.parent
    while not parent.exists():
        count, parent = count + 1, parent.parent
    return count
