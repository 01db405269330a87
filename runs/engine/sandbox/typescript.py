"""The TypeScript arm: its guest build (componentize-js) and each program's toolchain step.

The guest is wit/gg-sandbox.wit's `sandbox` world built from surfaces/sdk_ts (guest.js, sdk.js and
shapes.js, which surfaces/typescript.py projects from the WIT) with every WASI feature disabled.
A program is type-checked against gg.d.ts (the same projection) by the warm compiler, stripped to
JavaScript, and run by the guest; the runtime's frames are mapped back through the source map so
every location is in the program's own coordinates. Loaded code (`lib:<key>`) is compiled the
same way, in its own coordinates; code that does not compile fails as a module error when a
program imports it.
"""

import hashlib
import json
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from runs.engine.sandbox.compiler import ToolchainError, get_compiler
from runs.engine.sandbox.var import sandbox_dir
from runs.engine.tools.docs import Entry
from surfaces import typescript
from surfaces.wit import WIT_PATH

REPO = Path(__file__).resolve().parents[3]
SDK_DIR = REPO / "surfaces" / "sdk_ts"
LOCKFILE = REPO / "package-lock.json"
GUEST_SOURCES = ("guest.js", "sdk.js")
WRAPPER = "(function (require, exports, module) {"  # guest.js's evaluate(): prefixed to line 1
LABEL = "TypeScript"


class CompileError(Exception):
    """The program did not compile: the compiler's diagnostics, verbatim."""


# -- the guest build -------------------------------------------------------------------------------
def key_inputs():
    """(name, bytes) of everything the compiled guest depends on besides wasmtime."""
    return [("wit", WIT_PATH.read_bytes()), ("package-lock.json", LOCKFILE.read_bytes()),
            ("shapes.js", typescript.shapes_module().encode()), ("build.mjs", (SDK_DIR / "build.mjs").read_bytes())] + \
        [(name, (SDK_DIR / name).read_bytes()) for name in GUEST_SOURCES]


def componentize(wasm, workdir):
    """Build the component into `wasm`; RuntimeError with the tool's output when it fails."""
    node = shutil.which("node")
    if node is None:
        raise RuntimeError("node is not on PATH")
    if not (REPO / "node_modules" / "@bytecodealliance" / "componentize-js").is_dir():
        raise RuntimeError("componentize-js is not installed (scripts/setup runs npm ci)")
    for name in GUEST_SOURCES:
        shutil.copy(SDK_DIR / name, workdir / name)
    (workdir / "shapes.js").write_text(typescript.shapes_module())
    done = subprocess.run([node, str(SDK_DIR / "build.mjs"), str(workdir / "guest.js"), str(WIT_PATH), str(wasm)],
                          capture_output=True, text=True, cwd=REPO)
    if done.returncode != 0:
        raise RuntimeError(f"componentize-js failed:\n{done.stdout}\n{done.stderr}")


# -- the toolchain step ----------------------------------------------------------------------------
def declarations_path(directory=None):
    """gg.d.ts under var/sandbox/, named by its content so a changed WIT gets a fresh worker."""
    text = typescript.declarations()
    path = Path(directory or sandbox_dir()) / f"gg-{hashlib.sha256(text.encode()).hexdigest()[:16]}.d.ts"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", dir=path.parent, delete=False, suffix=".partial") as tmp:
            tmp.write(text)
        Path(tmp.name).replace(path)
    return path


def lib_key(name):
    """A skill's or memory's name in TypeScript's convention: csv-tools, csv_tools -> csvTools."""
    words = [w for w in re.split(r"[^0-9A-Za-z]+", name) if w]
    if not words:
        return "module"
    key = words[0][0].lower() + words[0][1:] + "".join(w[0].upper() + w[1:] for w in words[1:])
    return f"_{key}" if key[0].isdigit() else key


@dataclass
class Prepared:
    """A program ready for the guest: its JavaScript, the loaded modules', and their maps."""

    program: str
    modules: list  # [(key, javascript)]
    maps: dict  # file as the runtime names it ("program.ts", "lib:csvTools") -> source map lines

    def remap(self, text):
        """The guest's raw frames (`    at fn@program.ts:L:C`) in the author's coordinates."""
        return _FRAME.sub(self._frame, text) if text else text

    def _frame(self, match):
        fn, file, line, column = match.group("fn"), match.group("file"), int(match.group("line")), int(match.group("col"))
        line, column = self.position(file, line, column)
        where = f"line {line}, column {column}"
        if file != "program.ts":
            where = f"{file} {where}"
        return f"    at {fn + ', ' if fn else ''}{where}"

    def position(self, file, line, column):
        """1-based runtime position -> 1-based position in the source the author wrote."""
        lines = self.maps.get(file)
        if lines is None:
            return line, column
        column0 = column - 1 - (len(WRAPPER) if line == 1 else 0)
        for row in range(min(line - 1, len(lines) - 1), -1, -1):
            segments = [s for s in lines[row] if row < line - 1 or s[0] <= column0] or \
                (lines[row][:1] if row == line - 1 else [])
            if segments:
                _, src_line, src_col = segments[-1]
                return src_line + 1, src_col + 1
        return line, column

    def location(self, raw):
        match = re.fullmatch(r"program\.ts:(\d+):(\d+)", raw or "")
        if not match:
            return raw
        line, column = self.position("program.ts", int(match.group(1)), int(match.group(2)))
        return f"line {line}, column {column}"


_FRAME = re.compile(r"^    at (?P<fn>[^@\n]*)@(?P<file>program\.ts|lib:[\w$]+):(?P<line>\d+):(?P<col>\d+)$", re.M)


@lru_cache(maxsize=256)
def _compiled_module(compiler, key, source, lib_keys):
    return compiler.compile(f"lib/{key}.ts", source, lib_keys)


def prepare(source, lib):
    """Type-check and strip `source` and the loaded code; raises CompileError or ToolchainError."""
    compiler = get_compiler(declarations_path())
    keys = tuple(lib.modules)
    answer = compiler.compile("program.ts", source, keys)
    if not answer["ok"]:
        raise CompileError(answer["diagnostics"])
    maps, modules = {"program.ts": answer["map"]}, []
    for key, module in lib.modules.items():
        compiled = _compiled_module(compiler, key, module["source"], keys)
        if compiled["ok"]:
            modules.append((key, compiled["js"]))
            maps[f"lib:{key}"] = compiled["map"]
        else:  # fails when imported, as a module error naming its key (its source never shown)
            modules.append((key, f"throw new SyntaxError({json.dumps(compiled['diagnostics'])});"))
    return Prepared(answer["js"], modules, maps)


def lib_entries(key, name, source, lib_keys=()):
    """The documentation entries of loaded code: one per function it exports, under the name it was
    exported as. None when it does not compile (its import then fails as a module error)."""
    try:
        compiled = _compiled_module(get_compiler(declarations_path()), key, source, tuple(lib_keys))
    except ToolchainError:
        return []
    if not compiled["ok"]:
        return []
    found = []
    for export in compiled["exports"]:
        entry_key = f"lib.{key}.{export['name']}"
        body = "\n".join([f"{entry_key}{export['signature']}", "",
                          f'reached through: import * as {key} from "lib:{key}";', f"loaded from: {name}"] +
                         (["", export["doc"]] if export["doc"] else []))
        found.append(Entry(entry_key, "function", "lib", export["name"], export["doc"].split("\n", 1)[0], body))
    return found
