"""Binds gg's Python functions over the generated WIT bindings: one typed function per operation.

Each binding function in wit_world.imports.<interface> is operation `<interface>.<name>`; the
SDK function of the same name takes friendly Python (dicts or keyword arguments for records,
"keep"/("set", x)/{"set": x} for variants, strings for enums), returns gg.core.Value records,
and raises gg.core.ApiError: the host's error as it came. Arguments that cannot be lowered are
still reported to the host (feedback.malformed-call), which records the call and answers the
error: `invalid-argument` with the bindings' own complaint, or the refusal for an ungranted call.
"""

import dataclasses
import enum
import functools
import inspect
import typing

from componentize_py_types import Err
from wit_world.imports import feedback

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


# Converters are compiled once per type hint: the guest interprets every call's work in wasm,
# where re-deriving a hint's shape on each call cost more than the rest of the call.
_CONVERTERS = {}


def _converter(hint):
    """fn(value, where) -> the binding's value for `hint`, raising TypeError/ValueError naming `where`."""
    convert = _CONVERTERS.get(hint)
    if convert is None:
        convert = _CONVERTERS[hint] = _compile(hint)
    return convert


def _compile(hint):
    inner = _optional(hint)
    if inner is not None:
        convert_inner = _converter(inner)
        return lambda value, where: None if value is None else convert_inner(value, where)
    if hint is str:
        def string(value, where):
            if not isinstance(value, str):
                raise TypeError(f"{where} must be a string, not {type(value).__name__}")
            return value
        return string
    if hint is bool:
        def boolean(value, where):
            if not isinstance(value, bool):
                raise TypeError(f"{where} must be a bool, not {type(value).__name__}")
            return value
        return boolean
    if hint is int:
        def integer(value, where):
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"{where} must be an integer, not {type(value).__name__}")
            if value < 0:
                raise ValueError(f"{where} must not be negative")
            return value
        return integer
    if hint is float:
        def number(value, where):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"{where} must be a number, not {type(value).__name__}")
            return float(value)
        return number
    if typing.get_origin(hint) in (list, typing.List):
        (item,) = typing.get_args(hint)
        convert_item = _converter(item)

        def items(value, where):
            if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
                raise TypeError(f"{where} must be a list, not {type(value).__name__}")
            return [convert_item(v, f"{where}[{i}]") for i, v in enumerate(value)]
        return items
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        names = {m.name.lower(): m for m in hint}

        def member(value, where):
            if isinstance(value, hint):
                return value
            key = value.replace("-", "_").lower() if isinstance(value, str) else None
            if key not in names:
                raise ValueError(f"{where} must be one of {', '.join(repr(n) for n in names)}")
            return names[key]
        return member
    if _is_variant(hint):
        return _Variant(hint).convert
    if dataclasses.is_dataclass(hint):
        return _Record(hint).convert
    return lambda value, where: value


class _Variant:
    def __init__(self, hint):
        self.cases = {_case_name(c): c for c in typing.get_args(hint)}
        self.classes = tuple(self.cases.values())
        self.bare = {name for name, case in self.cases.items() if not dataclasses.fields(case)}
        self.payloads = {}  # case name -> converter of its payload (for the cases that carry one)
        for name, case in self.cases.items():
            if dataclasses.fields(case):
                (field,) = dataclasses.fields(case)
                self.payloads[name] = _converter(typing.get_type_hints(case)[field.name])

    def convert(self, value, where):
        if isinstance(value, self.classes):
            return value
        if isinstance(value, str) and value in self.bare:
            return self.cases[value]()
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.items()))
        if isinstance(value, tuple) and len(value) == 2 and value[0] in self.cases:
            if value[0] in self.bare:  # a payload for a case that carries none
                raise ValueError("not enough values to unpack (expected 1, got 0)")
            return self.cases[value[0]](self.payloads[value[0]](value[1], where))
        raise TypeError(f"{where} must be one of {', '.join(repr(c) for c in self.cases)} "
                        f"(a bare name, or (name, value) for a case that carries one)")


class _Record:
    def __init__(self, cls):
        self.cls = cls
        hints = typing.get_type_hints(cls)
        self.names = ", ".join(f.name for f in dataclasses.fields(cls))
        self.known = {f.name for f in dataclasses.fields(cls)}
        # (name, converter, default, the variant's case names when the field is a variant)
        self.fields = [(f.name, _converter(hints[f.name]), _default(hints[f.name]),
                        [_case_name(c) for c in typing.get_args(hints[f.name])] if _is_variant(hints[f.name]) else [])
                       for f in dataclasses.fields(cls)]

    def convert(self, value, where):
        if isinstance(value, self.cls):
            return value
        if isinstance(value, Value):
            value = value.to_json()
        if not isinstance(value, dict):
            raise TypeError(f"{where} must be a dict of {self.names}")
        known = self.known
        fields = {}
        for name, convert, default, cases in self.fields:
            if name in value:
                fields[name] = convert(value[name], f"{where}.{name}")
            elif any(k in value or f"{k}_id" in value for k in cases):
                # A variant field given flat: spawn_subagent(agent=..., prompt=...) or issue_id=...
                case = next(k for k in cases if k in value or f"{k}_id" in value)
                known = known | {case, f"{case}_id"}
                fields[name] = convert((case, value.get(case, value.get(f"{case}_id"))), where)
            else:
                if default is dataclasses.MISSING:
                    raise TypeError(f"{where} is missing {name!r}")
                fields[name] = default
        unknown = set(value) - known
        if unknown:
            raise TypeError(f"{where} has no field {', '.join(repr(u) for u in sorted(unknown))}")
        return self.cls(**fields)


# Receiver methods that alias an operation (the Python arm's four): record type -> method.
RECEIVERS = {}


def receiver(record_name):
    def register(cls):
        RECEIVERS[record_name] = cls
        return cls
    return register


_PLAIN = (str, int, float, bool, type(None))
_PLANS = {}  # binding class -> how its values become the SDK's


def from_binding(value):
    if isinstance(value, _PLAIN):
        return value
    if isinstance(value, list):
        return [from_binding(v) for v in value]
    plan = _PLANS.get(type(value))
    if plan is None:
        plan = _PLANS[type(value)] = _plan(type(value))
    return plan(value)


def _plan(cls):
    if issubclass(cls, enum.Enum):
        return lambda value: value.name.lower()
    if not dataclasses.is_dataclass(cls):
        return lambda value: value
    names = [f.name for f in dataclasses.fields(cls)]
    if "_" in cls.__name__:  # a variant case: its payload, told apart by .kind
        kind = _case_name(cls)
        if "value" not in names:
            return lambda value: Value(kind=kind)

        def case(value):
            payload = from_binding(value.value)
            if isinstance(payload, Value):
                return type(payload)(kind=kind, **payload.to_json())
            return Value(kind=kind, value=payload)
        return case
    make = RECEIVERS.get(cls.__name__, Value)
    return lambda value: make(**{name: from_binding(getattr(value, name)) for name in names})


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
    signature = inspect.Signature([inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                     default=defaults.get(n, inspect.Parameter.empty)) for n in names])
    converters = [(n, _converter(hints[n])) for n in names]
    # Positional calls that leave out only defaulted trailing parameters skip Signature.bind.
    required = len(names) - len(defaults)
    tail = [defaults[n] for n in names[required:]]
    operation = f"{namespace}.{key}"

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            if not kwargs and required <= len(args) <= len(names):
                values = (*args, *tail[len(args) - required:])
            else:
                if single_record and not args and kwargs and names[0] not in kwargs:
                    kwargs = {names[0]: kwargs}  # write_memory(name=..., body=...) builds the record
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                values = [bound.arguments[n] for n in names]
            lowered = [convert(v, n) for (n, convert), v in zip(converters, values)]
        except (TypeError, ValueError) as exc:
            # Still the program's call: the host records it and answers the error to throw.
            error = feedback.malformed_call(operation, str(exc))
            raise ApiError(error.operation, _error_code(error.code), error.message) from None
        try:
            result = fn(*lowered)
        except Err as err:
            raise ApiError(err.value.operation, _error_code(err.value.code), err.value.message) from None
        return from_binding(result)

    call.__signature__ = inspect.Signature(
        [inspect.Parameter(n, inspect.Parameter.POSITIONAL_OR_KEYWORD,
                           default=defaults.get(n, inspect.Parameter.empty), annotation=hints[n]) for n in names])
    call.__ggop__ = operation
    call.__module__ = f"gg.{namespace}"
    call.__qualname__ = key
    return call
