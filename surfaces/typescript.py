"""The TypeScript arm's SDK, projected from the membrane: the call shapes the guest binds and the
`gg.d.ts` programs are type-checked against — one projection of one WIT, so the two cannot drift.

Spelling rules (the seeds' table): required parameters are positional; when a function has
required parameters its optional ones (options, lists, a `keep` edit) travel in one trailing
`options` object (`readFile(path, { limit })`), and a function with none takes a lone optional
positionally (`listDir(path?)`) or several in `options` (`tree({ depth })`). Records are objects
with camelCase fields; a variant is written `"keep"`, `{ set: x }` going in and comes back tagged
by `kind`; a variant field with no `keep` case is written flat (`{ agent, prompt }`, `{ agent,
issueId }`). The four receiver methods hang off classes (`gg.board.IssueCreated.wait`).
"""

import json
import re
from functools import lru_cache

from surfaces.arms import ALIASES, arm, camel
from surfaces.catalogue import BY_ID, MODULES, MODULES_BY_ID
from surfaces.wit import interfaces

NUMBERS = {"u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64", "f32", "f64"}
PRIMITIVES = {"string": "string", "bool": "boolean", **{n: "number" for n in NUMBERS}}
FLAT_CASE_NAMES = {"issue": "issueId"}  # a case whose payload is the id of the thing it names
ERROR_CODES = ("invalid-argument", "not-found", "conflict", "refused", "unavailable", "limit-exceeded", "io-error",
               "other")


def _camel(kebab):
    return camel(kebab.replace("-", "_"))


def _pascal(kebab):
    return "".join(part.capitalize() for part in kebab.split("-"))


def _module_of(interface):
    return "core" if interface == "types" else interface


@lru_cache(maxsize=1)
def _types():
    """{type name: (module, kind, [(member, member type or None)])} over every model-facing interface."""
    found = {}
    for interface, spec in interfaces().items():
        if interface == "feedback":
            continue
        for name, (kind, _doc, members) in spec["types"].items():
            rows = []
            for member, _ in members:
                if kind == "record":
                    field, wit = (p.strip() for p in member.split(":", 1))
                    rows.append((field, wit))
                elif kind == "variant":
                    m = re.fullmatch(r"([\w-]+)(?:\((.+)\))?", member)
                    rows.append((m.group(1), m.group(2)))
                else:
                    rows.append((member, None))
            found[name] = (_module_of(interface), kind, rows)
    return found


def _inner(wit):
    m = re.fullmatch(r"(option|list)<(.+)>", wit.strip())
    return (m.group(1), m.group(2)) if m else (None, wit.strip())


def _operations():
    """(op id, interface, kebab function, params [(name, wit)], ok type) for every operation, WIT order."""
    for interface, spec in interfaces().items():
        for fn, wit in spec["funcs"].items():
            op_id = f"{interface}.{fn.replace('-', '_')}"
            if op_id in BY_ID:
                yield op_id, interface, fn, list(wit.params), wit.ok_type


def _defaultable(wit, types, field=False):
    """Whether a parameter or field may be left out: an option, a variant with `keep`, or (a record's
    field) a list."""
    outer, name = _inner(wit)
    if outer == "option" or (outer == "list" and field):
        return True
    spec = types.get(name)
    return spec is not None and spec[1] == "variant" and any(case == "keep" for case, _ in spec[2])


def _input_types():
    """Named types reachable from a parameter: they are written in their going-in shape."""
    types, seen = _types(), set()

    def walk(wit):
        for name in re.findall(r"[a-z][a-z0-9-]*", wit):
            if name in types and name not in seen:
                seen.add(name)
                for _, member in types[name][2]:
                    if member:
                        walk(member)

    for _op, _iface, _fn, params, _ok in _operations():
        for _, wit in params:
            walk(wit)
    return seen


def _plan(params, types):
    """(positional count, whether the rest travel in an `options` object)."""
    required = 0
    while required < len(params) and not _defaultable(params[required][1], types):
        required += 1
    rest = len(params) - required
    options = rest > 0 and (required > 0 or rest > 1)
    return required, options


RECEIVERS = {op_id: (receiver, method) for op_id, receiver, method in ALIASES}
RECEIVER_TYPES = {receiver: op_id for op_id, receiver, _ in ALIASES}  # `IssueCreated` -> board.wait_for_issue


# -- the shapes the guest's SDK binds (surfaces/sdk_ts/sdk.js) ---------------------------------------------------
def _descriptor(wit, types):
    """How the SDK lowers a value of this WIT type: null passes through, else a small tree."""
    outer, name = _inner(wit)
    if outer == "option":
        inner = _descriptor(name, types)
        return None if inner is None else {"o": inner}
    if outer == "list":
        inner = _descriptor(name, types)
        return {"l": inner}
    if name == "u64":
        return {"p": "big"}
    if name in ("u8", "u16", "u32"):
        return {"p": "u"}
    if name in types and types[name][1] in ("record", "variant"):
        return name
    return None


def _lifter(wit, types):
    """How the SDK lifts a returned value of this WIT type: null when the bindings' value is already
    the program's (most are); else what to convert — u64s to numbers, variants to `kind`-tagged."""
    outer, name = _inner(wit)
    if outer:
        inner = _lifter(name, types)
        return None if inner is None else {outer[0]: inner}
    if name == "u64":
        return "big"
    spec = types.get(name)
    if spec is None or spec[1] == "enum":
        return None
    if spec[1] == "variant":
        return {"v": {case: (_lifter(payload, types) if payload else None) for case, payload in spec[2]}}
    fields = [[_camel(field), lifter] for field, member in spec[2] if (lifter := _lifter(member, types)) is not None]
    return {"r": fields} if fields else None


@lru_cache(maxsize=1)
def shapes():
    """Everything the guest's SDK needs, as plain data (written into the guest at build time)."""
    types = _types()
    type_table = {}
    for name, (_module, kind, rows) in types.items():
        if kind == "record":
            fields = []
            for field, wit in rows:
                spec = types.get(_inner(wit)[1])
                default = "list" if _inner(wit)[0] == "list" else \
                    "keep" if spec and spec[1] == "variant" and any(c == "keep" for c, _ in spec[2]) else None
                flat = None
                if spec and spec[1] == "variant" and default is None:
                    flat = {FLAT_CASE_NAMES.get(case, _camel(case)): case for case, _ in spec[2]}
                fields.append([_camel(field), _descriptor(wit, types), default, flat])
            type_table[name] = {"r": fields}
        elif kind == "variant":
            # a case carrying a payload maps to [its descriptor]; a bare case to null
            type_table[name] = {"v": {case: ([_descriptor(payload, types)] if payload else None) for case, payload in rows}}
    functions = []
    for op_id, interface, fn, params, ok in _operations():
        positional, options = _plan(params, types)
        receiver = None
        outer, ok_name = _inner(ok)
        if ok_name in types and _pascal(ok_name) in RECEIVER_TYPES:
            receiver = _pascal(ok_name)
        functions.append({"op": op_id, "module": interface, "binding": _camel(fn), "name": arm("typescript").name(op_id),
                          "params": [[_camel(p), _descriptor(w, types), "list" if _inner(w)[0] == "list" else
                                      "keep" if _defaultable(w, types) and not _inner(w)[0] else None]
                                     for p, w in params],
                          "positional": positional, "options": options, "receiver": receiver,
                          "lift": _lifter(ok, types),
                          "list": outer == "list"})
    receivers = {}
    for op_id, (receiver, method) in RECEIVERS.items():
        first = _operations_by_id()[op_id][3][0][0]
        receivers[receiver] = {"module": BY_ID[op_id].module, "method": method,
                               "function": arm("typescript").name(op_id), "field": "name" if first == "name" else "id"}
    return {"types": type_table, "functions": functions, "receivers": receivers,
            "modules": [m.id for m in MODULES if m.id != "core"],
            "moduleNames": module_names()}


@lru_cache(maxsize=1)
def _operations_by_id():
    return {row[0]: row for row in _operations()}


def module_names():
    """gg's modules qualified as the documentation qualifies them: what a ReferenceError is answered with."""
    return [arm("typescript").module_path(m.id) for m in MODULES]


def shapes_module():
    """shapes.js: the SDK's shapes as an ES module (built into the guest beside sdk.js)."""
    return "// Generated from wit/gg-sandbox.wit by surfaces/typescript.py; do not edit.\nexport default " + \
        json.dumps(shapes(), indent=1, sort_keys=True) + ";\n"


# -- the declarations programs are type-checked against ----------------------------------------------------------
class _Renderer:
    def __init__(self):
        self.types = _types()
        self.inputs = _input_types()

    def ref(self, name, here):
        module = self.types[name][0]
        rendered = _pascal(name)
        return rendered if module == here else f"{module}.{rendered}"

    def type(self, wit, here):
        outer, name = _inner(wit)
        if outer == "option":
            return f"{self.type(name, here)} | undefined"
        if outer == "list":
            inner = self.type(name, here)
            return f"({inner})[]" if "|" in inner or "&" in inner else f"{inner}[]"
        if name in PRIMITIVES:
            return PRIMITIVES[name]
        if name == "_":
            return "void"
        return self.ref(name, here)

    def field(self, field, wit, here, going_in):
        optional = (going_in and _defaultable(wit, self.types, field=True)) or _inner(wit)[0] == "option"
        wit_type = _inner(wit)[1] if _inner(wit)[0] == "option" else wit
        return f"{_camel(field)}{'?' if optional else ''}: {self.type(wit_type, here)}"

    def declaration(self, name):
        module, kind, rows = self.types[name]
        going_in = name in self.inputs
        label = _pascal(name)
        if kind == "enum":
            return f"type {label} = {' | '.join(json.dumps(m) for m, _ in rows)};"
        if kind == "variant":
            cases = []
            for case, payload in rows:
                if going_in:
                    cases.append(json.dumps(case) if payload is None else f"{{ {case}: {self.type(payload, module)} }}")
                elif payload is None:
                    cases.append(f'{{ kind: "{case}" }}')
                elif self.types.get(payload, (None, None))[1] == "record":
                    cases.append(f'({{ kind: "{case}" }} & {self.type(payload, module)})')
                else:
                    cases.append(f'{{ kind: "{case}"; value: {self.type(payload, module)} }}')
            return f"type {label} = {' | '.join(cases)};"
        fields, flat = [], []
        for field, wit in rows:
            spec = self.types.get(_inner(wit)[1])
            if going_in and spec and spec[1] == "variant" and not _defaultable(wit, self.types, field=True):
                flat = [f"{{ {FLAT_CASE_NAMES.get(case, _camel(case))}: {self.type(payload, module)} }}"
                        for case, payload in spec[2]]
                continue
            fields.append(self.field(field, wit, module, going_in))
        body = "{ " + "; ".join(fields) + " }"
        if label in RECEIVER_TYPES:
            return self.receiver(label, fields, module)
        if flat:
            return f"type {label} = {body} & ({' | '.join(flat)});"
        return f"interface {label} {body}"

    def receiver(self, label, fields, module):
        op_id = RECEIVER_TYPES[label]
        _, _, _, params, ok = _operations_by_id()[op_id]
        rest = ", ".join(self.param(p, w, module) for p, w in params[1:])
        method = RECEIVERS[op_id][1]
        doc = f"/** Alias of {arm('typescript').spell(op_id)}(this.{'name' if params[0][0] == 'name' else 'id'}" \
              f"{', ' + ', '.join(_camel(p) for p, _ in params[1:]) if params[1:] else ''}). */"
        members = "".join(f"\n  readonly {f};" for f in fields)
        return (f"class {label} {{\n  private constructor();{members}\n  {doc}\n"
                f"  {method}({rest}): {self.type(ok, module)};\n}}")

    def param(self, name, wit, here, optional=False):
        outer, inner = _inner(wit)
        wit_type = inner if outer == "option" else wit
        return f"{_camel(name)}{'?' if optional else ''}: {self.type(wit_type, here)}"

    def function(self, op_id, interface, params, ok):
        positional, options = _plan(params, self.types)
        rendered = [self.param(p, w, interface) for p, w in params[:positional]]
        rest = params[positional:]
        if options:
            rendered.append("options?: { " + "; ".join(self.param(p, w, interface, True) for p, w in rest) + " }")
        else:
            rendered += [self.param(p, w, interface, True) for p, w in rest]
        returns = self.type(ok, interface)
        return f"function {arm('typescript').name(op_id)}({', '.join(rendered)}): {returns};"


def signature(op_id):
    """How the documentation shows a function: `gg.files.readFile(path: string, …): FileRead`."""
    _, interface, _, params, ok = _operations_by_id()[op_id]
    line = _Renderer().function(op_id, interface, params, ok)
    return arm("typescript").module_path(interface) + "." + line.removeprefix("function ").removesuffix(";")


def type_declaration(name):
    """A WIT type's declaration in the TypeScript SDK (`interface TextRead { … }`)."""
    return _Renderer().declaration(name)


API_ERROR = ("class ApiError extends Error {\n"
             "  /** The key of the operation the program called (`read_file`). */\n"
             "  readonly operation: string;\n"
             f"  readonly code: {' | '.join(json.dumps(c) for c in ERROR_CODES)};\n"
             "  readonly message: string;\n"
             "  /** All three fields, so an error put in a view arrives whole. */\n"
             "  toJSON(): { operation: string; code: string; message: string };\n}")


@lru_cache(maxsize=1)
def declarations():
    """gg.d.ts: the module "gg" a program imports, one namespace per module, from the WIT."""
    renderer = _Renderer()
    wit = interfaces()
    out = ["// Generated from wit/gg-sandbox.wit by surfaces/typescript.py; do not edit.",
           "// The only output a program has besides gg's views: lines go to the operator's log.",
           "declare var console: { log(...data: unknown[]): void; info(...data: unknown[]): void; "
           "warn(...data: unknown[]): void; error(...data: unknown[]): void; debug(...data: unknown[]): void };",
           'declare module "gg" {']
    for module in MODULES:
        interface = "types" if module.id == "core" else module.id
        out.append(f"  /** {module.brief} */\n  export namespace {module.id} {{")
        for name in wit[interface]["types"]:
            if name == "api-error":
                continue
            out.append("    export " + renderer.declaration(name).replace("\n", "\n    "))
        if module.id == "core":
            out.append("    /** The failure every failed call raises. */\n    export " + API_ERROR.replace("\n", "\n    "))
        for fn, function in wit[interface]["funcs"].items():
            op_id = f"{interface}.{fn.replace('-', '_')}"
            if op_id in BY_ID:
                _, _, _, params, ok = _operations_by_id()[op_id]
                doc = function.doc
                summary = doc.split(" — ", 1)[1] if " — " in doc else ""
                out.append((f"    /** {summary} */\n" if summary else "") + "    export " +
                           renderer.function(op_id, interface, params, ok))
        out.append("  }")
    out.append("  export import ApiError = core.ApiError;")
    out.append("}")
    return "\n".join(out) + "\n"


assert set(MODULES_BY_ID) - {"core"} == {m for m in interfaces() if m not in ("types", "feedback")}
