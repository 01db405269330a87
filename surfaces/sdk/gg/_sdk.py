"""Binds gg's Python functions over the generated WIT bindings: one typed function per operation.

Each binding function in wit_world.imports.<interface> is operation `<interface>.<name>`; the
SDK function of the same name takes friendly Python (dicts or keyword arguments for records,
"keep"/("set", x)/{"set": x} for variants, strings for enums), returns gg.core.Value records,
and raises gg.core.ApiError: the host's error as it came, or `invalid-argument` when the
arguments could not be lowered (the bindings' own complaint after it).
"""

import dataclasses
import enum
import functools
import inspect
import typing

from componentize_py_types import Err

from gg.core import ApiError, Value


def _case_name(cls):
    return cls.__name__.split("_", 1)[1].lower() if "_" in cls.__name__ else cls.__name__.lower()


def _is_variant(hint):
    args = typing.get_args(hint)
    return typing.get_origin(hint) is typing.Union and args and all(
        dataclasses.is_dataclass(a) and "_" in a.__name__ for a in args)


def _optional(hint):
    args = typing.get_args(hint)
    if typing.get_origin(hint) is typing.Union and type(None) in args and len(args) == 2:
        return next(a for a in args if a is not type(None))
    return None


def _describe(hint):
    if _optional(hint) is not None:
        return f"{_describe(_optional(hint))} or None"
    if typing.get_origin(hint) in (list, typing.List):
        return "a list"
    if isinstance(hint, type):
        return {str: "a string", int: "an integer", float: "a number", bool: "a bool"}.get(hint, hint.__name__)
    return str(hint)


def _default(hint):
    """The value a record field or parameter takes when the program leaves it out."""
    if _optional(hint) is not None:
        return None
    if typing.get_origin(hint) in (list, typing.List):
        return []
    if _is_variant(hint):
        keep = [c for c in typing.get_args(hint) if _case_name(c) == "keep"]
        if keep:
            return keep[0]()
    return dataclasses.MISSING


def to_binding(hint, value, where):
    inner = _optional(hint)
    if inner is not None:
        return None if value is None else to_binding(inner, value, where)
    if hint is str:
        if not isinstance(value, str):
            raise TypeError(f"{where} must be a string, not {type(value).__name__}")
        return value
    if hint is bool:
        if not isinstance(value, bool):
            raise TypeError(f"{where} must be a bool, not {type(value).__name__}")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise TypeError(f"{where} must be an integer, not {type(value).__name__}")
        if value < 0:
            raise ValueError(f"{where} must not be negative")
        return value
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError(f"{where} must be a number, not {type(value).__name__}")
        return float(value)
    if typing.get_origin(hint) in (list, typing.List):
        if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
            raise TypeError(f"{where} must be a list, not {type(value).__name__}")
        (item,) = typing.get_args(hint)
        return [to_binding(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        if isinstance(value, hint):
            return value
        names = {m.name.lower(): m for m in hint}
        key = value.replace("-", "_").lower() if isinstance(value, str) else None
        if key not in names:
            raise ValueError(f"{where} must be one of {', '.join(repr(n) for n in names)}")
        return names[key]
    if _is_variant(hint):
        return _variant(hint, value, where)
    if dataclasses.is_dataclass(hint):
        return _record(hint, value, where)
    return value


def _variant(hint, value, where):
    cases = {_case_name(c): c for c in typing.get_args(hint)}
    if isinstance(value, tuple(cases.values())):
        return value
    if isinstance(value, str) and value in cases and not dataclasses.fields(cases[value]):
        return cases[value]()
    if isinstance(value, dict) and len(value) == 1:
        value = next(iter(value.items()))
    if isinstance(value, tuple) and len(value) == 2 and value[0] in cases:
        case = cases[value[0]]
        (field,) = dataclasses.fields(case)
        return case(to_binding(typing.get_type_hints(case)[field.name], value[1], where))
    raise TypeError(f"{where} must be one of {', '.join(repr(c) for c in cases)} "
                    f"(a bare name, or (name, value) for a case that carries one)")


def _record(cls, value, where):
    if isinstance(value, cls):
        return value
    if isinstance(value, Value):
        value = value.to_json()
    if not isinstance(value, dict):
        raise TypeError(f"{where} must be a dict of {', '.join(f.name for f in dataclasses.fields(cls))}")
    hints = typing.get_type_hints(cls)
    known = {f.name for f in dataclasses.fields(cls)}
    fields = {}
    for field in dataclasses.fields(cls):
        hint = hints[field.name]
        if field.name in value:
            fields[field.name] = to_binding(hint, value[field.name], f"{where}.{field.name}")
        elif _is_variant(hint) and any(k in value or f"{k}_id" in value for k in
                                       (_case_name(c) for c in typing.get_args(hint))):
            # A variant field given flat: spawn_subagent(agent=..., prompt=...) or issue_id=...
            case = next(k for k in (_case_name(c) for c in typing.get_args(hint)) if k in value or f"{k}_id" in value)
            known |= {case, f"{case}_id"}
            fields[field.name] = _variant(hint, (case, value.get(case, value.get(f"{case}_id"))), where)
        else:
            default = _default(hint)
            if default is dataclasses.MISSING:
                raise TypeError(f"{where} is missing {field.name!r}")
            fields[field.name] = default
    unknown = set(value) - known
    if unknown:
        raise TypeError(f"{where} has no field {', '.join(repr(u) for u in sorted(unknown))}")
    return cls(**fields)


# Receiver methods that alias an operation (the Python arm's four): record type -> method.
RECEIVERS = {}


def receiver(record_name):
    def register(cls):
        RECEIVERS[record_name] = cls
        return cls
    return register


def from_binding(value):
    if isinstance(value, list):
        return [from_binding(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name.lower()
    if dataclasses.is_dataclass(value):
        name = type(value).__name__
        fields = {f.name: from_binding(getattr(value, f.name)) for f in dataclasses.fields(value)}
        if "_" in name:  # a variant case: its payload, told apart by .kind
            kind = _case_name(type(value))
            payload = fields.get("value")
            if isinstance(payload, Value):
                return type(payload)(kind=kind, **payload.to_json())
            return Value(kind=kind, **({"value": payload} if "value" in fields else {}))
        return RECEIVERS.get(name, Value)(**fields)
    return value


def _error_code(code):
    return code.name.lower().replace("_", "-")


def bind(namespace, binding_module, exclude=()):
    """{name: SDK function} for every operation function in a bindings module."""
    functions = {}
    for name, fn in vars(binding_module).items():
        if inspect.isfunction(fn) and fn.__module__ == binding_module.__name__ and name not in exclude:
            functions[name] = _wrap(namespace, name, fn)
    return functions


def _wrap(namespace, key, fn):
    hints = typing.get_type_hints(fn)
    hints.pop("return", None)
    names = list(hints)
    # Trailing optional/list parameters may be left out.
    defaults, trailing = {}, True
    for name in reversed(names):
        default = _default(hints[name])
        if trailing and default is not dataclasses.MISSING and not dataclasses.is_dataclass(default):
            defaults[name] = default
        else:
            trailing = False
    single_record = len(names) == 1 and dataclasses.is_dataclass(hints[names[0]])

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            if single_record and not args and kwargs and names[0] not in kwargs:
                kwargs = {names[0]: kwargs}  # write_memory(name=..., body=...) builds the record
            bound = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                         default=defaults.get(n, inspect.Parameter.empty))
                                       for n in names]).bind(*args, **kwargs)
            bound.apply_defaults()
            lowered = [to_binding(hints[n], bound.arguments[n], n) for n in names]
        except (TypeError, ValueError) as exc:
            raise ApiError(key, "invalid-argument", str(exc)) from None
        try:
            result = fn(*lowered)
        except Err as err:
            raise ApiError(err.value.operation, _error_code(err.value.code), err.value.message) from None
        return from_binding(result)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           default=defaults.get(n, inspect.Parameter.empty), annotation=hints[n]) for n in names])
    call.__ggop__ = f"{namespace}.{key}"
    call.__module__ = f"gg.{namespace}"
    call.__qualname__ = key
    return call
