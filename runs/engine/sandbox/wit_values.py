"""Component-model values <-> plain Python, driven by the function's own WIT types.

The membrane speaks one plain form:

  record  <-> dict with snake_case keys      variant/result <-> (case, payload) tuple
  enum    <-> its case name (str)            option <-> None or the value
  list    <-> list                           numbers, strings, bools as themselves

Host functions convert straight between that form and the C API's `wasmtime_component_val_t`
with codecs compiled once per WIT type (`decoder`, `encoder`), and are registered through the
C API's raw callback (`add_host_func`). wasmtime-py's own `LinkerInstance.add_func` rebuilds the
function's type from its C pointer and walks it through FFI queries on every call, which cost
most of a membrane call; compiled codecs ask the type once.

`lift` converts the wasmtime-py value the guest's export returns (once per program).
"""

import ctypes
import itertools
from ctypes import byref, string_at

from wasmtime import WasmtimeError
from wasmtime import _ffi as ffi
from wasmtime.component import (F32, F64, S8, S16, S32, S64, U8, U16, U32, U64, Bool, EnumType, ListType, OptionType,
                                RecordType, ResultType, String, VariantType)
from wasmtime.component._enter import catch_exceptions  # what wasmtime-py's own trampoline uses

_NUMBERS = {Bool: "boolean", S8: "s8", S16: "s16", S32: "s32", S64: "s64", U8: "u8", U16: "u16", U32: "u32",
            U64: "u64", F32: "f32", F64: "f64"}
_KIND = {name: getattr(ffi, f"WASMTIME_COMPONENT_{name.upper()}").value for name in
         ("bool", "s8", "s16", "s32", "s64", "u8", "u16", "u32", "u64", "f32", "f64", "string", "list", "record",
          "variant", "enum", "option", "result")}
_KIND["boolean"] = _KIND["bool"]


def _py(name):
    return name.replace("-", "_")


def _text(vec):
    return string_at(vec.data, vec.size).decode() if vec.size else ""


# wasm_byte_vec_new with the bytes passed straight through, written in place: one FFI call per
# string instead of the four of ffi.str_to_capi and a copy (a function object of our own, so
# wasmtime-py's stays untouched).
_byte_vec_new = ffi.dll["wasm_byte_vec_new"]
_byte_vec_new.argtypes = [ctypes.POINTER(ffi.wasm_byte_vec_t), ctypes.c_size_t, ctypes.c_char_p]
_byte_vec_new.restype = None


def _put_bytes(vec, raw):
    """Write a wasm byte vector holding `raw` into the slot `vec`, allocated by wasmtime (which
    frees it after the call)."""
    _byte_vec_new(byref(vec), len(raw), raw)


def _maybe(compile_, ty):
    return None if ty is None else compile_(ty)


def _boxed(encode, value):
    """A payload behind a pointer (option, variant, result), owned by wasmtime once returned."""
    val = ffi.wasmtime_component_val_t()
    encode(value, val)
    return ffi.wasmtime_component_val_new(byref(val))


# -- C value -> plain ----------------------------------------------------------------------------
def decoder(ty):
    """fn(c_val) -> plain Python, for arguments the guest passed (wasmtime owns and frees them)."""
    if type(ty) in _NUMBERS:
        field = _NUMBERS[type(ty)]
        return lambda c: getattr(c.of, field)
    if isinstance(ty, String):
        return lambda c: _text(c.of.string)
    if isinstance(ty, EnumType):
        return lambda c: _text(c.of.enumeration)
    if isinstance(ty, RecordType):
        fields = [(_py(name), decoder(fty)) for name, fty in ty.fields]

        def record(c):
            data = c.of.record.data
            return {key: decode(data[i].val) for i, (key, decode) in enumerate(fields)}
        return record
    if isinstance(ty, ListType):
        element = decoder(ty.element)

        def items(c):
            seq = c.of.list
            data = seq.data
            return [element(data[i]) for i in range(seq.size)]
        return items
    if isinstance(ty, OptionType):
        payload = decoder(ty.payload)
        return lambda c: payload(c.of.option.contents) if c.of.option else None
    if isinstance(ty, ResultType):
        cases = {True: ("ok", _maybe(decoder, ty.ok)), False: ("err", _maybe(decoder, ty.err))}

        def result(c):
            name, decode = cases[bool(c.of.result.is_ok)]
            return (name, decode(c.of.result.val.contents) if decode else None)
        return result
    if isinstance(ty, VariantType):
        cases = {name: _maybe(decoder, cty) for name, cty in ty.cases}

        def variant(c):
            name = _text(c.of.variant.discriminant)
            decode = cases[name]
            return (name, decode(c.of.variant.val.contents) if decode else None)
        return variant
    raise TypeError(f"the membrane does not carry WIT values of type {type(ty).__name__}")


# -- plain -> C value ----------------------------------------------------------------------------
def _aggregate(kind, ctype, new_uninit, delete, entries, inert):
    """The encoder of a record or a list: `entries(value)` -> (the items, how one is written)."""
    def aggregate(value, c):
        items, write = entries(value)
        raw = _filled(ctype, new_uninit, delete, items, write, inert)
        c.kind = _KIND[kind]
        setattr(c.of, kind, raw)
    return aggregate


def encoder(ty):
    """fn(plain, c_val) writing a result into a slot wasmtime provided (and frees after the call).

    Each sets the slot's kind last: a conversion that fails leaves the slot as it was, never a
    kind whose payload wasmtime would free uninitialised."""
    if type(ty) in _NUMBERS:
        field, kind = _NUMBERS[type(ty)], _KIND[_NUMBERS[type(ty)]]
        convert = float if isinstance(ty, (F32, F64)) else _exact(bool if field == "boolean" else int)

        def number(value, c):
            setattr(c.of, field, convert(value))
            c.kind = kind
        return number
    if isinstance(ty, (String, EnumType)):
        kind, field = (_KIND["string"], "string") if isinstance(ty, String) else (_KIND["enum"], "enumeration")

        def text(value, c):
            if not isinstance(value, str):
                raise TypeError(f"expected str, not {type(value).__name__}")
            _put_bytes(getattr(c.of, field), value.encode())
            c.kind = kind
        return text
    if isinstance(ty, RecordType):
        fields = [(name.encode(), _py(name), encoder(fty)) for name, fty in ty.fields]

        def record_entries(value):
            get = value.get if isinstance(value, dict) else (lambda key: getattr(value, key, None))
            return fields, _record_entry(get)
        return _aggregate("record", ffi.wasmtime_component_valrecord_t, ffi.wasmtime_component_valrecord_new_uninit,
                          ffi.wasmtime_component_valrecord_delete, record_entries, _inert_entry)
    if isinstance(ty, ListType):
        element = encoder(ty.element)

        def list_entries(value):
            if not isinstance(value, (list, tuple)):
                raise TypeError(f"expected a list, not {type(value).__name__}")
            return value, element
        return _aggregate("list", ffi.wasmtime_component_vallist_t, ffi.wasmtime_component_vallist_new_uninit,
                          ffi.wasmtime_component_vallist_delete, list_entries, _inert)
    if isinstance(ty, OptionType):
        payload = encoder(ty.payload)

        def option(value, c):
            c.of.option = None if value is None else _boxed(payload, value)
            c.kind = _KIND["option"]
        return option
    if isinstance(ty, ResultType):
        cases = {"ok": _maybe(encoder, ty.ok), "err": _maybe(encoder, ty.err)}

        def result(value, c):
            tag, payload = (value, None) if isinstance(value, str) else value
            encode = cases[tag]
            c.of.result.val = _boxed(encode, payload) if encode else None
            c.of.result.is_ok = tag == "ok"
            c.kind = _KIND["result"]
        return result
    if isinstance(ty, VariantType):
        cases = {name: _maybe(encoder, cty) for name, cty in ty.cases}

        def variant(value, c):
            tag, payload = (value, None) if isinstance(value, str) else value
            encode = cases[tag]
            c.of.variant.val = _boxed(encode, payload) if encode else None
            _put_bytes(c.of.variant.discriminant, tag.encode())
            c.kind = _KIND["variant"]
        return variant
    raise TypeError(f"the membrane does not carry WIT values of type {type(ty).__name__}")


def _exact(kind):
    def check(value):
        if not isinstance(value, kind):
            raise TypeError(f"expected {kind.__name__}, not {type(value).__name__}")
        return value
    return check


def _record_entry(get):
    def fill(field, entry):
        name, key, encode = field
        encode(get(key), entry.val)
        _put_bytes(entry.name, name)
    return fill


def _inert(slot):
    slot.kind = _KIND["bool"]
    slot.of.boolean = False


def _inert_entry(entry):
    entry.name = ffi.wasm_byte_vec_t()
    _inert(entry.val)


def _filled(vector, new_uninit, delete, items, fill, inert):
    """A C vector of len(items) slots, each written by fill(item, slot). If one fails, the slots
    not yet written are made inert and the vector freed: nothing uninitialised is ever freed."""
    raw = vector()
    new_uninit(raw, len(items))
    data, done = raw.data, 0
    try:
        for item in items:
            fill(item, data[done])
            done += 1
    except BaseException:
        for j in range(done, len(items)):
            inert(data[j])
        delete(byref(raw))
        raise
    return raw


# -- raw host functions --------------------------------------------------------------------------
_HOSTS = {}  # handle -> host(args, results), released by the linker's finalizer
_HANDLES = itertools.count(1)  # never 0: a null `void *` reads back as None


@ffi.wasmtime_component_func_callback_t
def _trampoline(handle, context, _ty, args, _nargs, results, _nresults):
    host = _HOSTS[handle]
    return catch_exceptions(context, lambda _store: host(args, results))


@ctypes.CFUNCTYPE(None, ctypes.c_void_p)
def _release(handle):
    _HOSTS.pop(handle, None)


def add_host_func(linker_instance, name, params, result, host):
    """Define `name` in a wasmtime-py LinkerInstance as host(*plain args) -> plain result.

    `params` and `result` are the function's WIT types (from the component's import types)."""
    decoders = [decoder(ty) for _, ty in params]
    encode = encoder(result) if result is not None else None

    def call(args, results):
        value = host(*[decode(args[i]) for i, decode in enumerate(decoders)])
        if encode is not None:
            encode(value, results[0])

    handle = next(_HANDLES)
    _HOSTS[handle] = call
    raw_name = name.encode()
    error = ffi.wasmtime_component_linker_instance_add_func(linker_instance.ptr(), ctypes.create_string_buffer(raw_name),
                                                            len(raw_name), _trampoline, handle, _release)
    if error:
        _HOSTS.pop(handle, None)
        raise WasmtimeError._from_ptr(error)


# -- the export's value (wasmtime-py's form) -------------------------------------------------------
def lift(ty, value):
    """A wasmtime-py value of type `ty` as plain Python."""
    if isinstance(ty, RecordType):
        return {_py(name): lift(fty, getattr(value, name)) for name, fty in ty.fields}
    if isinstance(ty, OptionType):
        return None if value is None else lift(ty.payload, value)
    if isinstance(ty, ListType):
        return [lift(ty.element, item) for item in value]
    if isinstance(ty, (VariantType, ResultType)):
        raise TypeError("the guest's export returns records, options, lists and scalars only")
    return value
