"""Component-model values <-> plain Python, driven by the function's own WIT types.

wasmtime's Python values depend on the shape of the type (a variant whose cases Python cannot
tell apart needs `Variant(tag, payload)`, otherwise the bare payload), so the membrane speaks
one plain form and this module converts using the type:

  record  <-> dict with snake_case keys      variant/result <-> (case, payload) tuple
  enum    <-> its case name (str)            option <-> None or the value
  list    <-> list                           numbers, strings, bools as themselves
"""

from wasmtime.component import (F32, F64, ListType, OptionType, Record, RecordType, ResultType, TupleType, Variant,
                                VariantType)


def _classes(ty):
    found = set()
    if ty is None:
        found.add(object)
    else:
        ty.add_classes(found)
    return tuple(found)


def _py(name):
    return name.replace("-", "_")


# Asking wasmtime for a type's shape costs FFI calls; the membrane's types live as long as the
# linker, so their shapes are remembered by identity (the type object is kept alive beside it).
_SHAPES = {}


def _shape(ty):
    shape = _SHAPES.get(id(ty))
    if shape is None or shape[0] is not ty:
        if isinstance(ty, RecordType):
            shape = (ty, [(name, _py(name), fty) for name, fty in ty.fields])
        else:
            shape = (ty, (ty._tagged(), ty._cases()))
        _SHAPES[id(ty)] = shape
    return shape[1]


def lift(ty, value):
    """A wasmtime value of type `ty` as plain Python."""
    if isinstance(ty, RecordType):
        return {key: lift(fty, getattr(value, name)) for name, key, fty in _shape(ty)}
    if isinstance(ty, OptionType):
        return None if value is None else lift(ty.payload, value)
    if isinstance(ty, (VariantType, ResultType)):
        tagged, cases = _shape(ty)
        if tagged:
            case_ty = dict(cases)[value.tag]
            return (value.tag, None if case_ty is None else lift(case_ty, value.payload))
        for name, case_ty in cases:
            if case_ty is None:
                if value is None:
                    return (name, None)
            elif isinstance(value, _classes(case_ty)):
                return (name, lift(case_ty, value))
        raise ValueError(f"no case of the variant matches {value!r}")
    if isinstance(ty, ListType):
        return value if isinstance(value, bytes) else [lift(ty.element, item) for item in value]
    if isinstance(ty, TupleType):
        return tuple(lift(ety, item) for ety, item in zip(ty.elements, value))
    return value


def lower(ty, value):
    """Plain Python as a wasmtime value of type `ty`."""
    if ty is None:
        return None
    if isinstance(ty, RecordType):
        record = Record()
        for name, key, fty in _shape(ty):
            field = value.get(key) if isinstance(value, dict) else getattr(value, key, None)
            setattr(record, name, lower(fty, field))
        return record
    if isinstance(ty, OptionType):
        return None if value is None else lower(ty.payload, value)
    if isinstance(ty, (VariantType, ResultType)):
        tag, payload = (value, None) if isinstance(value, str) else value
        tagged, cases = _shape(ty)
        case_ty = dict(cases)[tag]
        lowered = None if case_ty is None else lower(case_ty, payload)
        return Variant(tag, lowered) if tagged else lowered
    if isinstance(ty, ListType):
        return value if isinstance(value, bytes) else [lower(ty.element, item) for item in value]
    if isinstance(ty, TupleType):
        return tuple(lower(ety, item) for ety, item in zip(ty.elements, value))
    if isinstance(ty, (F32, F64)):
        return float(value)
    return value
