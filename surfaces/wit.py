"""wit/gg-sandbox.wit read as data: each interface's types and functions with their doc comments.

The documentation runtime (runs/engine/tools/docs.py) and the Reference page both read signatures
from here, so what they show is what the membrane declares. The WIT this project writes keeps one
declaration per line, which is all this reader needs; tests/surfaces/test_wit.py checks it against
the bindings componentize-py generates from the same file.
"""

import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

WIT_PATH = Path(__file__).resolve().parent.parent / "wit" / "gg-sandbox.wit"
ERRORS_PREFIX = "Errors:"


@dataclass(frozen=True)
class WitFunction:
    interface: str
    name: str  # kebab-case, as the WIT writes it
    doc: str  # the doc comment, its `Errors:` line left out
    params: tuple  # ((name, WIT type), ...)
    result: str  # the whole result type, `result<T, api-error>` for a model-facing function
    errors: tuple  # ((error code, when), ...) from the doc comment's `Errors:` line

    @property
    def ok_type(self):
        """T of result<T, api-error>; `_` for a function that returns nothing on success."""
        m = re.fullmatch(r"result<(.+), api-error>", self.result)
        return m.group(1) if m else (self.result or "_")


def split_params(text):
    """Split a parameter list at its top-level commas (`list<option<u32>>` keeps its own)."""
    depth, current, out = 0, "", []
    for ch in text:
        depth += ch == "<"
        depth -= ch == ">"
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    if current.strip():
        out.append(current)
    return [p.strip() for p in out]


def _errors(doc_lines):
    """`Errors: not-found when the file is absent; conflict when …` -> (("not-found", "when …"), …)."""
    found = []
    for line in doc_lines:
        if line.startswith(ERRORS_PREFIX):
            for part in line[len(ERRORS_PREFIX):].split(";"):
                code, _, when = part.strip().partition(" ")
                if code:
                    found.append((code, when.strip()))
    return tuple(found)


@lru_cache(maxsize=1)
def interfaces():
    """{interface: {"types": {name: (kind, doc, [(member line, member doc)])}, "funcs": {name: WitFunction}}}."""
    parsed, current, name, doc, block = {}, None, None, [], None
    for raw in WIT_PATH.read_text().splitlines():
        line = raw.strip()
        if line.startswith("///"):
            doc.append(line[3:].strip())
            continue
        m = re.match(r"interface ([\w-]+) \{", line)
        if m:
            name, current = m.group(1), parsed.setdefault(m.group(1), {"types": {}, "funcs": {}})
            doc = []
            continue
        if current is None:
            doc = []
            continue
        m = re.match(r"(record|variant|enum) ([\w-]+) \{", line)
        if m:
            block = (m.group(2), m.group(1), " ".join(doc), [])
            doc = []
            continue
        if block is not None:
            if line == "}":
                current["types"][block[0]] = block[1:]
                block = None
            elif line and not line.startswith("//"):
                block[3].append((line.rstrip(","), " ".join(doc)))
                doc = []
            continue
        m = re.match(r"([\w-]+): func\((.*)\)(?: -> (.+))?;", line)
        if m:
            params = tuple(tuple(p.strip() for p in param.split(":", 1)) for param in split_params(m.group(2)))
            text = " ".join(d for d in doc if not d.startswith(ERRORS_PREFIX))
            current["funcs"][m.group(1)] = WitFunction(name, m.group(1), text, params, m.group(3) or "", _errors(doc))
        doc = []
    return parsed


def function(op_id):
    """The WIT function of an operation (`files.read_file` -> files/read-file), or None."""
    interface, _, key = op_id.partition(".")
    return interfaces().get(interface, {}).get("funcs", {}).get(key.replace("_", "-"))
