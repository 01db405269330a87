"""A launched run's workspace: an empty directory, or an uploaded zip unpacked safely.

A zip is untrusted: every member is checked before anything is written (no absolute paths, no
`..`, no symlinks or other special files, no member naming nothing (`.`) or a name over the
filesystem's limits, no two members landing on one path, bounded member count — directories
included — and unpacked size). A refused zip leaves nothing behind.
"""

import shutil
import stat
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

MAX_FILES = 2000  # members, directories included
MAX_NAME_BYTES = 255  # one path component (NAME_MAX)
MAX_PATH_CHARS = 1024
MAX_TOTAL_BYTES = 64 * 1024 * 1024
_CHUNK = 64 * 1024


class WorkspaceError(ValueError):
    """The zip was refused; the message says why, naming the member where there is one."""


def check_zip(upload) -> None:
    """Refuse a zip that could not be unpacked safely, without writing anything."""
    with _open_zip(upload) as archive:
        _members(archive)


def _open_zip(upload):
    try:
        upload.seek(0)
        return zipfile.ZipFile(upload)
    except zipfile.BadZipFile:
        raise WorkspaceError("the workspace upload is not a zip archive") from None


def _members(archive):
    """The regular files and directories of the archive, each checked; WorkspaceError otherwise."""
    infos = archive.infolist()
    files = [info for info in infos if not info.is_dir()]
    if len(files) > MAX_FILES:
        raise WorkspaceError(f"the zip holds {len(files)} files; at most {MAX_FILES} are unpacked")
    if len(infos) > MAX_FILES:
        raise WorkspaceError(f"the zip holds {len(infos)} members (directories count too); at most {MAX_FILES} "
                             f"are unpacked")
    declared = 0
    claimed = {}  # path parts -> "file" | "directory": a second member landing on a path is refused
    for info in infos:
        name = info.filename
        path = PurePosixPath(name.replace("\\", "/"))
        if name.startswith("\\") or (len(name) > 1 and name[1] == ":"):
            raise WorkspaceError(f"{name!r}: absolute paths are refused")
        _check_name(name, path)
        _claim(claimed, path.parts, info.is_dir(), name)
        # Unix zips keep the file type in the high bits of external_attr; 0 means "not recorded".
        file_type = stat.S_IFMT(info.external_attr >> 16)
        if file_type and file_type not in (stat.S_IFREG, stat.S_IFDIR):
            kind = "symlinks are" if file_type == stat.S_IFLNK else "special files are"
            raise WorkspaceError(f"{name!r}: {kind} refused")
        declared += info.file_size
        if declared > MAX_TOTAL_BYTES:
            raise WorkspaceError(f"the zip unpacks to more than {MAX_TOTAL_BYTES // (1024 * 1024)} MiB")
    return infos


def _check_name(name, path):
    if path.is_absolute():
        raise WorkspaceError(f"{name!r}: absolute paths are refused")
    if ".." in path.parts:
        raise WorkspaceError(f"{name!r}: paths with '..' are refused")
    if not path.parts:
        raise WorkspaceError(f"{name!r}: the member names no file")
    if "\0" in name:
        raise WorkspaceError(f"{name!r}: a name with a NUL character is refused")
    if len(name) > MAX_PATH_CHARS or any(len(p.encode(errors="replace")) > MAX_NAME_BYTES for p in path.parts):
        raise WorkspaceError(f"{name[:60]!r}…: a name over {MAX_NAME_BYTES} bytes (or a path over "
                             f"{MAX_PATH_CHARS} characters) is refused")


def seed_refusal(name, claimed):
    """Why a launch spec's seed file `name` cannot be written — the zip members' rules — or None.
    `claimed` is shared by the spec's seed files (one dict per spec)."""
    try:
        if name.endswith("/"):
            raise WorkspaceError(f"{name!r}: names a directory; a seed is a file")
        path = PurePosixPath(name)
        _check_name(name, path)
        _claim(claimed, path.parts, False, name)
    except WorkspaceError as exc:
        return str(exc)
    return None


def _claim(claimed, parts, is_dir, name):
    """Record where a member lands; a file meeting anything already there is refused by name."""
    for depth in range(1, len(parts)):
        if claimed.setdefault(parts[:depth], "directory") == "file":
            raise WorkspaceError(f"{name!r}: collides with the file {'/'.join(parts[:depth])!r}")
    if is_dir:
        if claimed.setdefault(parts, "directory") == "file":
            raise WorkspaceError(f"{name!r}: collides with a file of the same name")
    elif parts in claimed:
        raise WorkspaceError(f"{name!r}: collides with another member naming the same path")
    else:
        claimed[parts] = "file"


def unpack(upload, dest: Path) -> None:
    """Unpack `upload` (a zip file object) into the new directory `dest`, or refuse it whole."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=dest.parent))
    try:
        with _open_zip(upload) as archive:
            for info in _members(archive):
                target = staging.joinpath(*PurePosixPath(info.filename.replace("\\", "/")).parts)
                if info.is_dir():
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                # zipfile never inflates past a member's declared size (a lying header ends in a
                # CRC error), so the declared total checked above bounds what is written.
                with archive.open(info) as src, open(target, "wb") as out:
                    shutil.copyfileobj(src, out, _CHUNK)
        staging.rename(dest)
    except (zipfile.BadZipFile, NotImplementedError, EOFError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        raise WorkspaceError(f"the zip could not be read: {exc}") from None
    except OSError as exc:  # what the checks above did not foresee is still the zip's fault, named
        shutil.rmtree(staging, ignore_errors=True)
        raise WorkspaceError(f"the zip could not be unpacked: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def create_empty(dest: Path) -> None:
    dest.mkdir(parents=True, exist_ok=True)
