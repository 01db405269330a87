"""The TypeScript arm's warm compilers: long-lived Node workers (surfaces/sdk_ts/compiler.js), at
most COMPILERS per gg process, each started on first need and reused, so type-checking a program
costs no Node start-up, and a program the checker is slow on holds up one worker, not every
TypeScript agent of the server.

A worker that crashed, hung past COMPILE_TIMEOUT_SECS or could not start is a ToolchainError —
the program was not read, so it is not the program's fault (seeds/004 "Toolchain failures"); the
next compile starts a fresh worker.
"""

import collections
import json
import os
import queue
import select
import shutil
import subprocess
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
WORKER = REPO / "surfaces" / "sdk_ts" / "compiler.js"
COMPILE_TIMEOUT_SECS = 30  # a checker that runs longer than this is stuck, whatever the program
WORKER_HEAP_MB = 512
COMPILERS = 2  # workers per process: one per core here


class ToolchainError(Exception):
    """The compiler crashed or could not be started: nothing read the program."""


class Compiler:
    """One Node worker; `compile` is serialised (one request at a time on the pipe)."""

    def __init__(self, declarations):
        self.declarations = Path(declarations)
        self.process = None
        self.stderr = collections.deque(maxlen=40)
        self.lock = threading.Lock()
        self.starts = 0

    def _start(self):
        node = shutil.which("node")
        if node is None:
            raise ToolchainError("node is not on PATH")
        if not (REPO / "node_modules" / "typescript").is_dir():
            raise ToolchainError("the typescript package is not installed (scripts/setup runs npm ci)")
        self.stderr.clear()
        try:
            self.process = subprocess.Popen(
                [node, f"--max-old-space-size={WORKER_HEAP_MB}", str(WORKER), str(self.declarations)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=REPO,
                env={"PATH": os.environ.get("PATH", ""), "NODE_OPTIONS": ""})
        except OSError as exc:
            raise ToolchainError(f"the compiler could not be started: {exc}") from None
        self.starts += 1
        threading.Thread(target=self._drain, args=(self.process,), name="gg-ts-compiler-stderr", daemon=True).start()

    def _drain(self, process):
        for line in process.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    def _fail(self, what):
        process, self.process = self.process, None
        if process is not None:
            process.kill()
            process.wait()
        time.sleep(0.05)  # let the drain thread collect the crash's last lines
        detail = "\n".join(list(self.stderr)[-12:])
        raise ToolchainError(f"{what}" + (f":\n{detail}" if detail else ""))

    def compile(self, file, source, lib_keys=()):
        """{"ok": True, "js", "map"} or {"ok": False, "diagnostics"}; raises ToolchainError."""
        request = json.dumps({"file": file, "source": source, "libKeys": list(lib_keys)}) + "\n"
        with self.lock:
            if self.process is None or self.process.poll() is not None:
                self._start()
            try:
                self.process.stdin.write(request.encode())
                self.process.stdin.flush()
            except (BrokenPipeError, OSError):
                self._fail("the compiler exited")
            ready, _, _ = select.select([self.process.stdout], [], [], COMPILE_TIMEOUT_SECS)
            if not ready:
                self._fail(f"the compiler did not answer within {COMPILE_TIMEOUT_SECS} s")
            line = self.process.stdout.readline()
            if not line:
                self._fail(f"the compiler exited (status {self.process.wait()})")
            try:
                answer = json.loads(line)
            except ValueError:
                self._fail("the compiler answered something that is not JSON")
            if "crashed" in answer:
                self._fail(f"the compiler crashed: {answer['crashed']}")
            return answer

    def close(self):
        with self.lock:
            if self.process is not None:
                self.process.kill()
                self.process.wait()
                self.process = None


class CompilerPool:
    """The process's compilers for one set of declarations: a compile takes whichever is free (the
    one used last first, so a second Node starts only when two compiles overlap)."""

    def __init__(self, declarations, size=COMPILERS):
        self.free = queue.LifoQueue()
        for _ in range(size):
            self.free.put(Compiler(declarations))

    def compile(self, file, source, lib_keys=()):
        compiler = self.free.get()
        try:
            return compiler.compile(file, source, lib_keys)
        finally:
            self.free.put(compiler)

    @property
    def starts(self):
        return sum(c.starts for c in self.free.queue)

    def close(self):
        for compiler in list(self.free.queue):
            compiler.close()


_POOLS = {}
_LOCK = threading.Lock()


def get_compiler(declarations):
    """The process's pool of warm compilers for these declarations (each worker started on first need)."""
    with _LOCK:
        pool = _POOLS.get(str(declarations))
        if pool is None:
            pool = _POOLS[str(declarations)] = CompilerPool(declarations)
        return pool
