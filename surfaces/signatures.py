"""An operation's signature from the WIT, written in one arm's conventions for the Reference page.

The function is the arm's own spelling (`surfaces.arms`); parameters and types are the WIT's,
named and typed the way the arm's language writes them (camelCase or snake_case names, `string` /
`str` / `String`, `T | undefined` / `Option<T>`, ...). The WIT line itself is kept beside it, so a
reader can always check the projection against the membrane.
"""

import re
from dataclasses import dataclass

from surfaces.arms import ARMS, camel, pascal
from surfaces.wit import function

INTS = ("u8", "u16", "u32", "u64", "s8", "s16", "s32", "s64")


@dataclass(frozen=True)
class TypeStyle:
    prims: dict  # WIT primitive -> this language's name (ints and floats by WIT name)
    option: str  # "{}" placeholders
    listing: str
    unit: str
    param_case: object  # snake_case -> the parameter's name
    type_case: object  # snake_case -> a named type's name
    params_first: bool = True  # `name: T` (True) or `T name` (False)
    returns: str = " -> {}"  # suffix after the parameter list; a prefix when params_first is False
    optional_param: str = ""  # how an option<T> parameter is marked (TS `?`), else the option type
    throws: str = ""  # appended after the parameters (Swift `throws`)
    optional_default: str = ""  # what an option<T> parameter defaults to (Python `= None`)
    boxed: tuple = ()  # (primitive, name inside a generic) where the two differ (Java's Integer)


def _same(name):
    return name


def _prims(string, boolean, ints, floats):
    table = {"string": string, "bool": boolean}
    table.update({f: floats(f) if callable(floats) else floats for f in ("f32", "f64")})
    table.update({i: ints(i) if callable(ints) else ints for i in INTS})
    return table


_TS = TypeStyle(_prims("string", "boolean", "number", "number"), "{} | undefined", "{}[]", "void", camel, pascal,
                returns=": {}", optional_param="?")
_PY = TypeStyle(_prims("str", "bool", "int", "float"), "{} | None", "list[{}]", "None", _same, pascal,
                optional_default=" = None")
STYLES = {
    "typescript": _TS,
    "javascript": _TS,
    "python": _PY,
    "ruby": TypeStyle(_prims("String", "bool", "Integer", "Float"), "{}?", "Array[{}]", "nil", _same, pascal),
    "purescript": TypeStyle(_prims("String", "Boolean", "Int", "Number"), "Maybe {}", "Array {}", "Unit", camel,
                            pascal, returns=" -> Effect {}"),
    "java": TypeStyle(_prims("String", "boolean", lambda i: "long" if i.endswith("64") else "int", "double"),
                      "Optional<{}>", "List<{}>", "void", camel, pascal, params_first=False,
                      boxed=(("bool", "Boolean"), ("u32", "Integer"), ("s32", "Integer"), ("u64", "Long"),
                             ("s64", "Long"), ("f64", "Double"))),
    "kotlin": TypeStyle(_prims("String", "Boolean", lambda i: "Long" if i.endswith("64") else "Int", "Double"),
                        "{}?", "List<{}>", "Unit", camel, pascal, returns=": {}"),
    "rust": TypeStyle(_prims("String", "bool", lambda i: i.replace("s", "i"), lambda f: f), "Option<{}>",
                      "Vec<{}>", "()", _same, pascal, returns=" -> Result<{}, ApiError>"),
    "swift": TypeStyle(_prims("String", "Bool", lambda i: ("UInt" if i[0] == "u" else "Int") + i[1:], "Double"),
                       "{}?", "[{}]", "Void", camel, pascal, throws=" throws"),
    "cpp": TypeStyle(_prims("std::string", "bool", lambda i: ("uint" if i[0] == "u" else "int") + i[1:] + "_t",
                            "double"),
                     "std::optional<{}>", "std::vector<{}>", "void", _same, _same, params_first=False),
    "csharp": TypeStyle(_prims("string", "bool", lambda i: {"u32": "uint", "u64": "ulong", "s32": "int",
                                                            "s64": "long"}.get(i, "int"), "double"),
                        "{}?", "IReadOnlyList<{}>", "void", camel, pascal, params_first=False),
}

def _snake(wit_name):
    return wit_name.replace("-", "_")


def type_name(wit_type, style):
    """A WIT type expression in the arm's notation."""
    wit_type = wit_type.strip()
    m = re.fullmatch(r"(option|list)<(.+)>", wit_type)
    if m:
        inner = dict(style.boxed).get(m.group(2).strip()) or type_name(m.group(2), style)
        return (style.option if m.group(1) == "option" else style.listing).format(inner)
    if wit_type in ("_", ""):
        return style.unit
    if wit_type in style.prims:
        return style.prims[wit_type]
    return style.type_case(_snake(wit_type))


def _param(name, wit_type, style):
    pname = style.param_case(_snake(name))
    optional = wit_type.startswith("option<") and style.optional_param
    shown = type_name(wit_type[len("option<"):-1], style) if optional else type_name(wit_type, style)
    if style.params_first:
        default = style.optional_default if wit_type.startswith("option<") else ""
        return f"{pname}{style.optional_param if optional else ''}: {shown}{default}"
    return f"{shown} {pname}"


@dataclass(frozen=True)
class Signature:
    text: str  # the arm's rendering: gg.files.readFile(path: string, offset?: number, ...): FileRead
    wit: str  # the WIT line: files/read-file(path: string, ...) -> result<file-read, api-error>
    params: tuple  # ((arm's parameter text, WIT name, WIT type), ...)
    returns: str  # the success type in the arm's notation
    errors: tuple  # ((error code, when), ...) this function documents for itself
    doc: str


def signature(language, op_id):
    """The Signature of `op_id` on `language`'s arm, or None when the WIT declares no such function."""
    fn = function(op_id)
    if fn is None:
        return None
    style = STYLES[language]
    spelling = ARMS[language].spell(op_id)
    params = tuple((_param(n, t, style), n, t) for n, t in fn.params)
    returns = type_name(fn.ok_type, style)
    joined = ", ".join(p for p, _, _ in params)
    if style.params_first:
        text = f"{spelling}({joined}){style.throws}{style.returns.format(returns)}"
    else:
        text = f"{returns} {spelling}({joined})"
    wit = f"{fn.interface}/{fn.name}({', '.join(f'{n}: {t}' for n, t in fn.params)}) -> {fn.result}"
    doc = fn.doc[len(op_id):].lstrip(" —") if fn.doc.startswith(op_id) else fn.doc  # the WIT opens on the id
    return Signature(text, wit, params, returns, fn.errors, doc)
