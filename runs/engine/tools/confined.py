"""Run one shell command confined to a workspace, under bubblewrap.

    result = run_confined(command, workspace_root, timeout, interrupt=..., limits=...)

The command runs as `sh -c command` in fresh user, PID, network, IPC, UTS and mount namespaces
(`bwrap --unshare-all --die-with-parent`): the workspace is the only writable path (bound at its
own path, the working directory), the system directories are read-only, /etc holds only what the
dynamic linker and `alternatives` need, /tmp is a private tmpfs, and nothing else of the host —
var/, the database, the secret key, the repository — exists inside. The environment is a clean
one (never the server's). Resource limits are applied inside the namespace with util-linux
`prlimit` (processes, file size, CPU seconds, address space, open files).

The process limit is RLIMIT_NPROC, which the kernel does not apply to uid 0, and the address space
limit is per process: a server running as root also puts each command in a pids cgroup and a
memory cgroup of its own (v1 `/sys/fs/cgroup/{pids,memory}` or v2) where they are writable, the
memory one holding all the command's processes and its /tmp pages together to `memory_bytes` (six
forked processes held 9 GB), and kills what is left in them at the end. /tmp is `tmp_bytes` at most.
The file size limit holds one file; a `DiskWatch` holds what the command writes in all.

bwrap is the namespace's PID 1: when it dies every process in it dies, so killing it (on the
timeout, on `interrupt()` returning a reason — a cancel, the run's wall clock — or when the
command exits) leaves no descendant behind, `setsid` or not. Output is read as it comes and only
the tail of each stream is kept, so a command printing gigabytes costs a bounded buffer.

Where bubblewrap is missing or cannot create namespaces, `ConfinementUnavailable` is raised and
the caller refuses the call with its message: a shell never runs unconfined.
"""

import codecs
import os
import selectors
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from functools import lru_cache

BWRAP = "/usr/bin/bwrap"
PRLIMIT = "/usr/bin/prlimit"
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin"
# /etc entries the dynamic linker and Debian's /usr/bin/<tool> -> /etc/alternatives links need.
ETC_ENTRIES = ("ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "localtime")
ROOT_DIRS = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
POLL_SECS = 0.05
INTERRUPT_EVERY_SECS = 0.5  # how often `interrupt()` (a database read for a cancel) is asked
DRAIN_SECS = 2.0  # after the kill, how long the pipes may take to close
TAIL_CHARS = 16_384
# Where each limit can be set, v1 then v2: (hierarchy, the file holding the limit).
CGROUP_LIMITS = {
    "pids": (("/sys/fs/cgroup/pids", "pids.max"), ("/sys/fs/cgroup/unified", "pids.max"),
             ("/sys/fs/cgroup", "pids.max")),
    "memory": (("/sys/fs/cgroup/memory", "memory.limit_in_bytes"), ("/sys/fs/cgroup/unified", "memory.max"),
               ("/sys/fs/cgroup", "memory.max")),
}


class ConfinementUnavailable(Exception):
    """The shell cannot be confined on this server; the message says why."""


@dataclass(frozen=True)
class Limits:
    processes: int = 256
    file_bytes: int = 1024 ** 3
    cpu_secs: int = 3600
    memory_bytes: int = 2 * 1024 ** 3  # address space per process, and the command's in all (as root)
    open_files: int = 1024
    tmp_bytes: int = 256 * 1024 ** 2  # /tmp, a tmpfs: its pages are the host's memory

    def prlimit_args(self, timeout):
        cpu = max(1, min(self.cpu_secs, int(timeout) + 1))
        return [PRLIMIT, f"--nproc={self.processes}", f"--fsize={max(0, self.file_bytes)}", f"--cpu={cpu}",
                f"--as={self.memory_bytes}", f"--nofile={self.open_files}", "--"]


class DiskWatch:
    """Stops a command whose workspace outgrows its limits. RLIMIT_FSIZE holds each file to what
    the quota has left, but N files would pass it N times, and empty files take no bytes but an
    inode each. The filesystem's used bytes and inodes (statvfs: cheap enough for every poll) say
    when the workspace may have gained its `allowance` of either; only then does `check()` measure
    it (a walk): (None, a new allowance) to go on — growth that was someone else's only moves the
    mark — or (why it must stop, None)."""

    def __init__(self, path, allowance, check):
        self.path, self.allowance, self.check = path, allowance, check
        self.mark = self._used()

    def _used(self):
        fs = os.statvfs(self.path)
        return (fs.f_blocks - fs.f_bfree) * fs.f_frsize, fs.f_files - fs.f_ffree

    def __call__(self):
        used = self._used()
        if all(now - mark <= allowed for now, mark, allowed in zip(used, self.mark, self.allowance)):
            return None
        self.mark = used
        reason, self.allowance = self.check()
        return reason


@dataclass
class ConfinedResult:
    exit_code: int | None  # None when the command was killed
    stopped: str | None  # why it was killed: "timeout" or the interrupt's reason
    stdout: str  # the trailing `tail_chars` characters of each stream
    stderr: str
    stdout_chars: int = 0  # characters the stream carried in all
    stderr_chars: int = 0
    duration_ms: int = 0
    notes: list = field(default_factory=list)


class _Tail:
    """The last `limit` characters of a byte stream, decoded incrementally."""

    def __init__(self, limit):
        self.limit, self.decoder, self.text, self.chars = limit, codecs.getincrementaldecoder("utf-8")("replace"), "", 0

    def feed(self, data, final=False):
        piece = self.decoder.decode(data, final)
        self.chars += len(piece)
        self.text = (self.text + piece)[-self.limit:]


def _mounts(workspace, limits):
    args = []
    for name in ROOT_DIRS:
        path = f"/{name}"
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--ro-bind", "/usr", "/usr"]
    for entry in ETC_ENTRIES:
        args += ["--ro-bind-try", f"/etc/{entry}", f"/etc/{entry}"]
    args += ["--proc", "/proc", "--dev", "/dev", "--size", str(limits.tmp_bytes), "--tmpfs", "/tmp",
             "--bind", workspace, workspace]
    return args


def bwrap_command(command, workspace, timeout, limits):
    workspace = os.path.realpath(workspace)
    return [BWRAP, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
            "--uid", "65534", "--gid", "65534", "--hostname", "gg-shell", *_mounts(workspace, limits),
            "--chdir", workspace, "--clearenv", "--setenv", "PATH", SANDBOX_PATH, "--setenv", "HOME", workspace,
            "--setenv", "LANG", "C.UTF-8", "--setenv", "TMPDIR", "/tmp", "--",
            *limits.prlimit_args(timeout), "/bin/sh", "-c", command]


@lru_cache(maxsize=1)
def unavailable_reason():
    """None when a confined shell can run here, else why not (probed once per process)."""
    if not (os.access(BWRAP, os.X_OK) and os.access(PRLIMIT, os.X_OK)):
        return ("bubblewrap (/usr/bin/bwrap) is not installed on this server, so the shell cannot be confined "
                "to the workspace and is not run")
    try:
        with tempfile.TemporaryDirectory(prefix="gg-shell-probe-") as probe:
            done = subprocess.run(bwrap_command("true", probe, 5, Limits()), stdin=subprocess.DEVNULL,
                                  capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"bubblewrap could not be started ({exc}), so the shell is not run"
    if done.returncode != 0:
        detail = done.stderr.decode(errors="replace").strip()[:300]
        return f"bubblewrap cannot create the shell's namespaces on this server ({detail}), so the shell is not run"
    return None


class _Cgroups:
    """One command's cgroups, limits set (only as uid 0, where RLIMIT_NPROC does not bind and a cgroup
    can be made): `pids` and `memory` (CGROUP_LIMITS), a v2 hierarchy's one group holding both."""

    _serial = 0

    def __init__(self, limits):
        self.paths = []
        if os.geteuid() != 0:
            return
        if _Cgroups._serial == 0:
            _sweep()
        _Cgroups._serial += 1
        name = f"gg-shell-{os.getpid()}-{_Cgroups._serial}"
        # + bwrap's two processes and the joining shell
        for controller, value in (("pids", limits.processes + 4), ("memory", limits.memory_bytes)):
            any(self._limit(os.path.join(base, name), knob, value) for base, knob in CGROUP_LIMITS[controller])

    def _limit(self, path, knob, value) -> bool:
        """Set `knob` of the group at `path` (made first unless this command has it already)."""
        made = path not in self.paths
        try:
            if made:
                os.mkdir(path)
        except OSError:
            return False
        try:
            with open(os.path.join(path, knob), "w") as limit:
                limit.write(str(value))
        except OSError:
            if made:
                os.rmdir(path)
            return False
        if made:
            self.paths.append(path)
        return True

    def wrap(self, argv):
        """`argv` started from inside the cgroups: a shell joins each, then execs argv."""
        if not self.paths:
            return argv
        procs = [os.path.join(path, "cgroup.procs") for path in self.paths]
        join = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 126; shift; n=$((n - 1)); done; exec "$@"'
        return ["/bin/sh", "-c", join, "gg-cgroups", str(len(procs)), *procs, *argv]

    def remove(self):
        for path in self.paths:
            for _ in range(500):  # up to 5 s: killed processes leave a group (and free its memory) a while after
                try:
                    with open(os.path.join(path, "cgroup.procs")) as procs:
                        pids = [int(line) for line in procs if line.strip()]
                except OSError:
                    break
                for pid in pids:
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                try:
                    os.rmdir(path)
                    break
                except OSError:
                    time.sleep(0.01)


def _sweep():
    """Remove the empty groups of servers that are gone (killed mid-command, they could not remove
    theirs): once, when a process makes its first."""
    for base in {base for places in CGROUP_LIMITS.values() for base, _ in places}:
        try:
            names = [entry.name for entry in os.scandir(base) if entry.name.startswith("gg-shell-")]
        except OSError:
            continue
        for name in names:
            owner = name.split("-")[2]  # gg-shell-<pid>-<serial>
            if owner.isdigit() and not os.path.exists(f"/proc/{owner}"):
                try:
                    os.rmdir(os.path.join(base, name))  # refused while a process is still in it
                except OSError:
                    pass


def run_confined(command, workspace, timeout, *, interrupt=None, watch=None, limits=Limits(), tail_chars=TAIL_CHARS):
    """Run `sh -c command` confined to `workspace` for at most `timeout` seconds.

    `interrupt()`, asked every INTERRUPT_EVERY_SECS, and `watch()` (a DiskWatch), asked at every
    poll, return None to go on or a reason to stop (the namespace is killed and `stopped` is that
    reason). Raises ConfinementUnavailable."""
    reason = unavailable_reason()
    if reason is not None:
        raise ConfinementUnavailable(reason)
    started = time.monotonic()
    deadline = started + timeout
    cgroup = _Cgroups(limits)
    try:
        proc = subprocess.Popen(cgroup.wrap(bwrap_command(command, workspace, timeout, limits)),
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True)
    except OSError:
        cgroup.remove()
        raise
    try:
        return _supervise(proc, started, deadline, interrupt, watch, tail_chars)
    finally:
        _kill(proc)
        proc.wait()
        cgroup.remove()


def _supervise(proc, started, deadline, interrupt, watch, tail_chars):
    tails = {proc.stdout: _Tail(tail_chars), proc.stderr: _Tail(tail_chars)}
    stopped = None
    with selectors.DefaultSelector() as selector:
        for stream in tails:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ)
        next_interrupt = started
        kill_at = None
        while selector.get_map():
            now = time.monotonic()
            if stopped is None:
                if now >= deadline:
                    stopped = "timeout"
                elif watch is not None:
                    stopped = watch()
                if stopped is None and interrupt is not None and now >= next_interrupt:
                    next_interrupt = now + INTERRUPT_EVERY_SECS
                    stopped = interrupt()
                if stopped is not None:
                    _kill(proc)
                    kill_at = now
            elif now - kill_at > DRAIN_SECS:
                break
            for key, _ in selector.select(POLL_SECS):
                data = os.read(key.fd, 65536)
                if data:
                    tails[key.fileobj].feed(data)
                else:
                    selector.unregister(key.fileobj)
    _kill(proc)  # the command has exited: whatever it left running in the namespace goes with bwrap
    proc.wait()
    for stream, tail in tails.items():
        tail.feed(b"", final=True)
        stream.close()
    out, err = tails[proc.stdout], tails[proc.stderr]
    return ConfinedResult(exit_code=None if stopped else _exit_code(proc.returncode), stopped=stopped,
                          stdout=out.text, stderr=err.text, stdout_chars=out.chars, stderr_chars=err.chars,
                          duration_ms=int((time.monotonic() - started) * 1000))


def _kill(proc):
    if proc.poll() is None:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def _exit_code(code):
    return 128 - code if code < 0 else code  # a signal seen from outside: the shell's own convention
