"""Plain files: what every tool that reads or walks a workspace goes through.

A workspace is written by the model (its shell, its programs) and by uploads, so anything in it may
be a symlink to /etc/passwd, a hard link to var/secret_key, a FIFO that blocks a read forever or a
device. The tools only ever follow real directories and read plain regular files with one link:
`read_plain` opens without following a symlink (O_NOFOLLOW, O_NONBLOCK) and checks the opened file
itself, so no swap between a check and the open gets past it; `scan_plain` lists a directory
without following anything.

A listing looks at the caller's clock as it goes (`check`): a directory of 124,000 entries took
0.8 s to list alone, and host work beside other runs' takes several times as long.
"""

import os
import stat
from operator import attrgetter

from runs.engine.tools.errors import ToolError

CLOCK_EVERY = 1024  # entries listed between two looks at the caller's clock


def refusal(st, shown):
    """Why a file with this lstat/fstat result is not read, or None for a plain one."""
    if stat.S_ISLNK(st.st_mode):
        return f"{shown} is a symbolic link; the workspace tools do not follow links"
    if not stat.S_ISREG(st.st_mode):
        return f"{shown} is not a regular file"
    if st.st_nlink > 1:
        return f"{shown} is a hard link to another file; the workspace tools do not follow links"
    return None


def read_plain(path, limit, shown=None):
    """Up to `limit` bytes of `path` and whether there was more; ToolError unless it is a plain
    regular file with a single link (its last component is never followed)."""
    shown = shown or os.path.basename(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise ToolError("not-found", f"{shown} does not exist") from None
    except OSError as exc:
        if exc.errno == 40:  # ELOOP: the last component is a symlink
            raise ToolError("invalid-argument", f"{shown} is a symbolic link; the workspace tools do not "
                                                "follow links") from None
        raise ToolError("io-error", f"{shown} could not be read: {exc.strerror}") from None
    try:
        problem = refusal(os.fstat(fd), shown)
        if problem:
            raise ToolError("invalid-argument", problem)
        chunks, size = [], 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        data = b"".join(chunks)
        return data[:limit], len(data) > limit
    except OSError as exc:
        raise ToolError("io-error", f"{shown} could not be read: {exc.strerror}") from None
    finally:
        os.close(fd)


def listing(directory, check=None):
    """The entries of `directory` as os.scandir yields them (unsorted); `check()`, which raises to
    stop the listing, is called after every CLOCK_EVERY of them."""
    with os.scandir(directory) as found:
        for n, entry in enumerate(found, 1):
            yield entry
            if check is not None and n % CLOCK_EVERY == 0:
                check()


def scan_plain(directory, check=None):
    """(directories, files) of `directory` as os.DirEntry lists sorted by name: real directories,
    and plain single-link regular files; symlinks, hard links and special files are left out."""
    dirs, files = [], []
    try:
        for entry in listing(directory, check):
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if stat.S_ISDIR(st.st_mode):
                dirs.append(entry)
            elif refusal(st, entry.name) is None:
                files.append(entry)
    except OSError:
        return [], []
    dirs.sort(key=attrgetter("name"))
    files.sort(key=attrgetter("name"))
    return dirs, files


def plain_dir(base, relative):
    """`base/relative` when `relative` climbs nowhere and no component below `base` is anything
    but a real directory (missing ones included: it is then simply empty); None otherwise."""
    if not isinstance(relative, str) or os.path.isabs(relative) or "\0" in relative:
        return None
    full = os.fspath(base)
    for part in relative.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            return None
        full = os.path.join(full, part)
        try:
            if not stat.S_ISDIR(os.lstat(full).st_mode):
                return None
        except FileNotFoundError:
            continue
        except OSError:
            return None
    return full
