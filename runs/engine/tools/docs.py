"""The documentation runtime: entries for modules, functions and types, searched and opened as views.

Entries are projected from the catalogue (modules, operations), the arm's spellings and the WIT
(signatures, records, variants, enums), so what is documented is what the membrane declares.
Search shows only what `Grants.permits` allows — the same gate the membrane asks.
"""

import ast
import difflib
import re
from dataclasses import dataclass, field
from functools import lru_cache

from surfaces.arms import arm
from surfaces import typescript
from surfaces.catalogue import BY_ID, MODULES
from surfaces.wit import interfaces
from runs.engine.tools.errors import ToolError

DEFAULT_LIMIT, MAX_LIMIT = 20, 100
PRIMITIVES = {"string": "str", "bool": "bool", "u32": "int", "u64": "int", "s32": "int", "s64": "int", "f64": "float",
              "f32": "float", "u8": "int"}


@dataclass
class Entry:
    key: str
    kind: str  # module | function | type
    module: str
    name: str
    summary: str
    body: str = ""
    operation: str | None = None
    types_returned: list = field(default_factory=list)
    types_taken: list = field(default_factory=list)


def pascal(name):
    return "".join(part.capitalize() for part in name.split("-"))


def _py_type(wit, local):
    wit = wit.strip()
    m = re.fullmatch(r"(option|list)<(.+)>", wit)
    if m:
        inner = _py_type(m.group(2), local)
        return f"{inner} | None" if m.group(1) == "option" else f"list[{inner}]"
    if wit in PRIMITIVES:
        return PRIMITIVES[wit]
    return local.get(wit, pascal(wit))


def _named(wit, local):
    """Named (non-primitive) types inside a WIT type expression, as their documentation keys."""
    return [local.get(n, n) for n in re.findall(r"[a-z][a-z0-9-]*", wit)
            if n not in PRIMITIVES and n not in ("option", "list", "result", "api-error", "_")]


@lru_cache(maxsize=16)
def entries(language="python"):
    """Every documentation entry for an arm, keyed by its fully-qualified name."""
    the_arm = arm(language)
    wit = interfaces()
    found = {}
    type_keys = {}
    for interface, spec in wit.items():
        module = "core" if interface == "types" else interface
        if module == "feedback":
            continue
        for name in spec["types"]:
            type_keys[name] = f"{the_arm.module_path(module)}{the_arm.sep}{pascal(name)}"
    for interface, spec in wit.items():
        module = "core" if interface == "types" else interface
        if module == "feedback":
            continue
        for name, (kind, doc, members) in spec["types"].items():
            key = type_keys[name]
            if language == "typescript":  # the declaration as gg.d.ts writes it
                if name != "api-error":
                    found[key] = Entry(key, "type", module, pascal(name), doc or f"The {pascal(name)} {kind}.",
                                       ("/** " + doc + " */\n" if doc else "") + typescript.type_declaration(name))
                continue
            lines = [f"{kind} {pascal(name)}" + (f" — {doc}" if doc else "")]
            for member, member_doc in members:
                if ":" in member:
                    fname, ftype = member.split(":", 1)
                    lines.append(f"    {fname.strip().replace('-', '_')}: {_py_type(ftype, type_keys)}"
                                 + (f"  # {member_doc}" if member_doc else ""))
                else:
                    lines.append(f"    {member.replace('-', '_')}" + (f"  # {member_doc}" if member_doc else ""))
            found[key] = Entry(key, "type", module, pascal(name), doc or f"The {pascal(name)} {kind}.", "\n".join(lines))
    api_error = f"{the_arm.module_path('core')}{the_arm.sep}ApiError"
    found[api_error] = Entry(api_error, "type", "core", "ApiError", "The failure every failed call raises.",
                             "class ApiError(Exception)\n    operation: str  # the key of the operation called\n"
                             "    code: str  # the failure class: invalid-argument, not-found, conflict, refused, "
                             "unavailable, limit-exceeded, io-error, other\n    message: str\n"
                             "    to_json() -> dict  # all three fields" if language != "typescript" else typescript.API_ERROR)
    for module in MODULES:
        path = the_arm.module_path(module.id)
        found[path] = Entry(path, "module", module.id, module.id, module.brief,
                            f"{path} — {module.brief}\n\n{the_arm.import_line(module.id)}")
    for interface, spec in wit.items():
        for fn, wit_fn in spec["funcs"].items():
            op_id = f"{interface}.{fn.replace('-', '_')}"
            if op_id not in BY_ID:
                continue
            key = the_arm.spell(op_id)
            doc, ok_type = wit_fn.doc, wit_fn.ok_type
            rendered = []
            for pname, ptype in wit_fn.params:
                default = " = None" if ptype.startswith("option<") else ""
                rendered.append(f"{pname.replace('-', '_')}: {_py_type(ptype, type_keys)}{default}")
            returns = "None" if ok_type in ("_", "") else _py_type(ok_type, type_keys)
            summary = doc.split(" — ", 1)[1] if " — " in doc else doc
            summary = "" if summary == op_id else summary
            line = typescript.signature(op_id) if language == "typescript" else f"{key}({', '.join(rendered)}) -> {returns}"
            body = "\n".join([line, "",
                              f"operation: {op_id}", f"reached through: {the_arm.import_line(interface)}",
                              "raises: " + api_error] + (["", summary] if summary else []))
            found[key] = Entry(key, "function", interface, key.rsplit(the_arm.sep, 1)[1], summary or f"{op_id}.",
                               body, op_id, _named(ok_type, type_keys),
                               [t for _, ptype in wit_fn.params for t in _named(ptype, type_keys)])
    return found


def lib_entries(key, name, source):
    """The documentation entries of a loaded module (Python arm): one per function it declares —
    those `__all__` names, else every public top-level function. None when the source does not parse."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    functions = {node.name: node for node in tree.body if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}
    exported = [n for n in functions if not n.startswith("_")]
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                exported = [n for n in ast.literal_eval(node.value) if n in functions]
            except (ValueError, TypeError):
                pass
    found = []
    for fn in exported:
        node = functions[fn]
        entry_key = f"lib.{key}.{fn}"
        returns = f" -> {ast.unparse(node.returns)}" if node.returns else ""
        doc = ast.get_docstring(node)
        body = "\n".join([f"{entry_key}({ast.unparse(node.args)}){returns}", "",
                          f"reached through: from lib import {key}", f"loaded from: {name}"] + (["", doc] if doc else []))
        found.append(Entry(entry_key, "function", "lib", fn, (doc or "").split("\n", 1)[0], body))
    return found


def visible(entry, grants):
    if entry.module == "lib":  # code the agent loaded: it holds no gg function
        return True
    if entry.kind == "function":
        return grants.permits(entry.operation)
    if entry.module == "core":
        return True
    return any(grants.permits(op.id) for op in next(m for m in MODULES if m.id == entry.module).operations)


def search(grants, language, query=None, modules=(), type_name=None, kind=None, offset=None, limit=None, lib=()):
    """A page of the entries this agent may see (`lib`: the loaded code's entries besides gg's)."""
    limit = DEFAULT_LIMIT if limit is None else limit
    if not 1 <= limit <= MAX_LIMIT:
        raise ToolError("invalid-argument", f"limit must be between 1 and {MAX_LIMIT}")
    if kind is not None and kind not in ("module", "function", "type"):
        raise ToolError("invalid-argument", "kind is one of module, function, type")
    needle = (query or "").lower()
    ranked = []
    for entry in [*entries(language).values(), *lib]:
        if not visible(entry, grants) or (modules and entry.module not in modules) or (kind and entry.kind != kind):
            continue
        if type_name and type_name not in entry.body:
            continue
        if needle:
            if needle in entry.name.lower():
                rank = 0
            elif needle in entry.key.lower():
                rank = 1
            elif needle in entry.summary.lower():
                rank = 2
            elif needle in entry.body.lower():
                rank = 3
            else:
                continue
        else:
            rank = 0
        ranked.append((rank, entry.key, entry))
    ranked.sort(key=lambda r: (r[0], r[1]))
    start = offset or 0
    hits = [{"key": e.key, "kind": e.kind, "module": e.module, "name": e.name, "summary": e.summary}
            for _, _, e in ranked[start:start + limit]]
    return {"total": len(ranked), "offset": start, "hits": hits}


def lookup(grants, language, name, lib=()):
    """The entry a documentation view opens; not-found with up to three near names this agent binds."""
    table = {**entries(language), **{entry.key: entry for entry in lib}}
    entry = table.get(name)
    if entry is None or not visible(entry, grants):
        near = difflib.get_close_matches(name, [k for k, e in table.items() if visible(e, grants)], n=3)
        message = f"there is no documentation entry {name}"
        if near:
            message += "\n" + "\n".join(f"    {n}" for n in near)
        raise ToolError("not-found", message)
    return entry


def type_views(entry, language, doc_view_types):
    """The type entries a function's documentation view opens beside it, per docViewTypes."""
    if entry.module == "lib":  # loaded code names no gg type and raises no gg failure of its own
        return []
    flags = set() if doc_view_types in (None, "none") else set(doc_view_types.split("+"))
    table = entries(language)
    keys = []
    if "return" in flags:
        keys += entry.types_returned
    if "parameters" in flags:
        keys += entry.types_taken
    if "errors" in flags and entry.kind == "function":
        keys.append(f"{arm(language).module_path('core')}{arm(language).sep}ApiError")
    seen = []
    for key in keys:
        if key in table and key not in seen and key != entry.key:
            seen.append(key)
    return [table[k] for k in seen]
