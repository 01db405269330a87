"""The guests: build each arm's with its componentizer, cache it compiled, run programs in it.

Each guest is wit/gg-sandbox.wit's `sandbox` world. The Python arm's is built by componentize-py
from surfaces/sdk (the `gg` package and the entry module `gg_guest`) with WASI stubbed out
(`--stub-wasi`); the TypeScript arm's by componentize-js from surfaces/sdk_ts with every WASI
feature disabled (runs/engine/sandbox/typescript.py). Either way a program reaching for a
filesystem, a socket, the environment or a clock finds none: the membrane's host functions are
its only route out, and both guests link against the same host functions.

Building takes tens of seconds, so the compiled artifact (`Component.serialize`) is cached under
var/sandbox/, keyed on a hash of everything the guest depends on and the tool versions. Each
program gets a fresh Store (with a WASI config — a Store without one aborts the process), a memory
ceiling and an epoch deadline; a single ticker thread advances the engine's epoch.
"""

import fcntl
import hashlib
import importlib.metadata
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import wasmtime
from wasmtime import Config, Engine, Store, WasiConfig
from wasmtime.component import Component, FuncType, Linker, Record

from runs.engine.sandbox import typescript
from runs.engine.sandbox.var import sandbox_dir
from runs.engine.sandbox.wit_values import add_host_func, lift
from surfaces.wit import WIT_PATH

REPO = Path(__file__).resolve().parents[3]
SDK_DIR = REPO / "surfaces" / "sdk"
GUEST_MODULE = "gg_guest"
WIT_PACKAGE = "gg-console:gg"
TICK_SECS = 0.01  # the epoch ticker's period: the deadline's resolution


class SandboxError(Exception):
    """The sandbox itself could not be built or operated (a gg defect, not the program's)."""


def _python_inputs():
    return [("wit", WIT_PATH.read_bytes())] + [(path.relative_to(SDK_DIR).as_posix(), path.read_bytes())
                                               for path in sorted(SDK_DIR.rglob("*.py"))]


def _python_componentize(wasm, workdir):
    componentize = Path(sys.executable).with_name("componentize-py")
    command = [str(componentize), "-d", str(WIT_PATH), "-w", "sandbox", "componentize", "--stub-wasi",
               "-p", str(SDK_DIR), "-o", str(wasm), GUEST_MODULE]
    done = subprocess.run(command, capture_output=True, text=True, cwd=workdir)
    if done.returncode != 0:
        raise RuntimeError(f"componentize-py failed:\n{done.stdout}\n{done.stderr}")


# language -> (label, tool versions, key inputs, componentize(wasm, workdir))
BUILDS = {
    "python": ("Python", lambda: f"componentize-py={importlib.metadata.version('componentize-py')}",
               _python_inputs, _python_componentize),
    "typescript": (typescript.LABEL, lambda: "componentize-js=package-lock.json", typescript.key_inputs,
                   typescript.componentize),
}


def _build(language):
    try:
        return BUILDS[language]
    except KeyError:
        raise SandboxError(f"no guest runs {language} programs") from None


def cache_key(language="python"):
    """A hash of everything the compiled guest depends on."""
    _, versions, inputs, _ = _build(language)
    digest = hashlib.sha256(f"{versions()};wasmtime={importlib.metadata.version('wasmtime')}".encode())
    for name, data in inputs():
        digest.update(name.encode())
        digest.update(data)
    return digest.hexdigest()[:20]


def _engine():
    config = Config()
    config.epoch_interruption = True
    return Engine(config)


ENGINE = _engine()


def artifact_path(language="python"):
    return sandbox_dir() / f"guest-{language}-{cache_key(language)}.cwasm"


def build_guest(language="python", force=False, log=None):
    """Build and compile the guest unless a current artifact exists; returns its path.

    A file lock keeps two processes (two test sessions, a server and a command) from building at once."""
    label, _, _, componentize = _build(language)
    target = artifact_path(language)
    if target.exists() and not force:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f"build-{language}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if target.exists() and not force:
            return target
        started = time.monotonic()
        with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
            wasm = Path(tmp) / "guest.wasm"
            try:
                componentize(wasm, Path(tmp))
            except RuntimeError as exc:
                raise SandboxError(str(exc)) from None
            compiled = Component.from_file(ENGINE, str(wasm)).serialize()
            partial = target.with_suffix(".partial")
            partial.write_bytes(compiled)
            os.replace(partial, target)
        for stale in target.parent.glob(f"guest-{language}-*.cwasm"):
            if stale != target:
                stale.unlink(missing_ok=True)
        if log:
            log(f"built the {label} guest in {time.monotonic() - started:.1f} s: {target}")
    return target


class _Ticker:
    """Advances the engine's epoch every TICK_SECS; started on first use, a daemon thereafter."""

    def __init__(self):
        self._started = False
        self._lock = threading.Lock()

    def ensure(self):
        with self._lock:
            if not self._started:
                threading.Thread(target=self._run, name="gg-epoch-ticker", daemon=True).start()
                self._started = True

    @staticmethod
    def _run():
        # The epoch counts the ticks due since the start, not the wakes: a wake waits for the GIL, and
        # beside other runs' host work it came late enough that a program ran on past its deadline.
        started, ticks = time.monotonic(), 0
        while True:
            time.sleep(TICK_SECS)
            due = int((time.monotonic() - started) / TICK_SECS)
            for _ in range(due - ticks):
                ENGINE.increment_epoch()
            ticks = due


_TICKER = _Ticker()
_ACTIVE = threading.local()  # (membrane, store) of the program running on this thread: a wait nests another


class Trap(Exception):
    """The program was stopped by the sandbox (deadline, memory, a trap)."""

    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind = kind  # "timeout" | "out-of-memory" | "trap"
        self.detail = detail


def classify_trap(text):
    if "interrupt" in text:
        return "timeout"
    if "memory" in text and ("grow" in text or "out of" in text or "allocat" in text):
        return "out-of-memory"
    return "trap"


class Sandbox:
    """The compiled guest plus a linker whose host functions dispatch to the running membrane.

    Host functions are generated from the component's own import types: every function of every
    `gg-console:gg/<interface>` import becomes operation `<interface>.<function with _>`."""

    def __init__(self, component):
        self.component = component
        self.operations = []  # every operation id the guest imports, in WIT order
        self.linker = Linker(ENGINE)
        with self.linker.root() as root:
            for name, extern in component.type.imports(ENGINE).items():
                if not name.startswith(WIT_PACKAGE + "/"):
                    continue
                interface = name.split("/", 1)[1]
                functions = {fn: item.ty for fn, item in extern.ty.exports(ENGINE).items()}
                functions = {fn: ty for fn, ty in functions.items() if isinstance(ty, FuncType)}
                if not functions:
                    continue
                with root.add_instance(name) as instance:
                    for fn, ty in functions.items():
                        if interface == "feedback":
                            host = self._feedback_func(fn.replace("-", "_"))
                        else:
                            op_id = f"{interface}.{fn.replace('-', '_')}"
                            self.operations.append(op_id)
                            host = self._operation_func(op_id, [p.replace("-", "_") for p, _ in ty.params])
                        add_host_func(instance, fn, ty.params, ty.result, host)

    @staticmethod
    def _operation_func(op_id, names):
        def host(*args):
            membrane, store = _ACTIVE.run
            blocked = membrane.blocked_seconds
            result = membrane.call(op_id, dict(zip(names, args)))
            if membrane.blocked_seconds != blocked:  # other agents ran meanwhile: re-arm what is left
                store.set_epoch_deadline(_ticks(membrane.remaining()))
            return result

        return host

    @staticmethod
    def _feedback_func(fn):
        def host(*args):
            return _ACTIVE.run[0].feedback(fn, *args)

        return host

    def run(self, membrane, source, modules, timeout_secs, max_memory_bytes):
        """Run one program; returns the guest's program-outcome as a dict, or raises Trap."""
        _TICKER.ensure()
        store = Store(ENGINE)
        store.set_wasi(WasiConfig())  # nothing preopened, inherited or granted; required all the same
        store.set_limits(memory_size=max_memory_bytes)
        store.set_epoch_deadline(_ticks(timeout_secs))
        outer = getattr(_ACTIVE, "run", None)  # the waiting program whose call this one runs inside
        _ACTIVE.run = (membrane, store)
        try:
            instance = self.linker.instantiate(store, self.component)
            run = instance.get_func(store, "run")
            outcome_type = run.type(store).result
            raw = run(store, source, [_module_record(m) for m in modules])
            return lift(outcome_type, raw)
        except wasmtime.WasmtimeError as exc:
            text = str(exc)
            raise Trap(classify_trap(text), text) from None
        finally:
            _ACTIVE.run = outer


def _ticks(seconds):
    return max(1, int(seconds / TICK_SECS))


def _module_record(module):
    record = Record()
    record.name, record.source = module
    return record


_SANDBOXES = {}
_SANDBOX_LOCK = threading.Lock()


def get_sandbox(language="python", log=None):
    """The process's Sandbox for an arm, building its guest first if no current artifact exists."""
    with _SANDBOX_LOCK:
        if language not in _SANDBOXES:
            path = build_guest(language, log=log)
            _SANDBOXES[language] = Sandbox(Component.deserialize(ENGINE, path.read_bytes()))
        return _SANDBOXES[language]
