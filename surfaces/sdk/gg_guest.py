"""The guest's entry: runs one program's source text and reports how it ended.

Built into the component by componentize-py (runs/engine/sandbox.py), which snapshots the
interpreter after this module is imported. The guest has no filesystem to import from at run
time, so the standard library a program may use is imported here, before the snapshot.
"""

# Standard library a program may import (each is in sys.modules in the snapshot).
import base64  # noqa: F401
import bisect  # noqa: F401
import builtins
import collections  # noqa: F401
import copy  # noqa: F401
import csv  # noqa: F401
import dataclasses  # noqa: F401
import datetime  # noqa: F401
import decimal  # noqa: F401
import difflib  # noqa: F401
import enum  # noqa: F401
import fnmatch  # noqa: F401
import fractions  # noqa: F401
import functools  # noqa: F401
import hashlib  # noqa: F401
import heapq  # noqa: F401
import html  # noqa: F401
import importlib.abc
import importlib.util
import io
import itertools  # noqa: F401
import json  # noqa: F401
import linecache
import math  # noqa: F401
import operator  # noqa: F401
import os
import pprint  # noqa: F401
import random  # noqa: F401
import re  # noqa: F401
import shlex  # noqa: F401
import statistics  # noqa: F401
import string  # noqa: F401
import sys
import textwrap  # noqa: F401
import time
import traceback
import types
import typing  # noqa: F401
import unicodedata  # noqa: F401

import wit_world
from wit_world.imports import feedback

import gg
from gg.core import ApiError

PROGRAM = "<program>"
os.environ.clear()  # nothing of the build environment reaches a program

OUTSIDE = ("the sandbox has no filesystem, network, environment, clock or processes; "
           "gg's modules are a program's only way out")
_REFUSED_EVENTS = ("open", "os.", "socket.", "subprocess.", "shutil.", "glob.", "pty.", "ctypes.", "webbrowser.",
                   "urllib.", "http.", "ftplib.", "smtplib.", "sqlite3.")
_REFUSED_IMPORTS = {"socket", "_socket", "ssl", "select", "selectors", "subprocess", "asyncio", "threading",
                    "multiprocessing", "ctypes", "signal", "mmap", "urllib", "http", "sqlite3", "tempfile", "pathlib",
                    "shutil", "glob", "zipfile", "tarfile"}


def _outside(*_args, **_kwargs):
    raise PermissionError(OUTSIDE)


for _name in ("time", "time_ns", "monotonic", "monotonic_ns", "perf_counter", "perf_counter_ns", "process_time",
              "process_time_ns", "thread_time", "thread_time_ns", "sleep", "localtime", "gmtime", "ctime"):
    if hasattr(time, _name):
        setattr(time, _name, _outside)


# os functions that stay: pure computations on values the program already holds.
_OS_KEPT = {"fspath", "strerror", "fsencode", "fsdecode", "get_exec_path"}


def _seal():
    """Make every reach outside an ordinary exception: os functions that would ask WASI (stubbed to
    trap) raise instead, and tracebacks read program lines from the cache, never from disk."""
    for name in dir(os):
        value = getattr(os, name)
        if callable(value) and not isinstance(value, type) and name not in _OS_KEPT and not name.startswith("_") \
                and getattr(value, "__module__", "posix") in ("posix", "os"):
            setattr(os, name, _outside)
    linecache.checkcache = lambda *args, **kwargs: None
    linecache.updatecache = lambda *args, **kwargs: []


def _audit(event, args):
    # Turn a reach outside into an ordinary exception at the program's own line instead of a trap.
    if event == "import" and args[0].split(".")[0] in _REFUSED_IMPORTS:
        raise ImportError(f"{args[0]}: {OUTSIDE}")
    if event.startswith(_REFUSED_EVENTS):
        raise PermissionError(OUTSIDE)


class _Output(io.TextIOBase):
    """print(), sys.stdout and sys.stderr: each line goes to the operator's log, never to the model."""

    def __init__(self):
        self.pending = ""

    def writable(self):
        return True

    def write(self, text):
        self.pending += text
        *lines, self.pending = self.pending.split("\n")
        for line in lines:
            feedback.log(line)
        return len(text)

    def flush(self):
        if self.pending:
            feedback.log(self.pending)
            self.pending = ""


class _Library(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """`lib`: the code the agent loaded, each module evaluated by the import a program writes."""

    def __init__(self, modules):
        self.sources = {m.name: m.source for m in modules}

    def find_spec(self, fullname, path, target=None):
        if fullname == "lib" or (fullname.startswith("lib.") and fullname[4:] in self.sources):
            return importlib.util.spec_from_loader(fullname, self, is_package=fullname == "lib")
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        if module.__name__ == "lib":
            module.__path__ = []
            return
        key = module.__name__[4:]
        try:
            exec(compile(self.sources[key], f"<lib.{key}>", "exec"), module.__dict__)
        except Exception as exc:  # the module's author is not the model: name it, never quote its source
            feedback.report_module_error(key, f"{type(exc).__name__}: {exc}")
            module.__dict__.clear()
            module.__dict__["__name__"] = f"lib.{key}"


def _own_frames(exc):
    """The traceback cut down, by removal only, to frames of the program and of loaded code."""
    trace = traceback.TracebackException.from_exception(exc)
    for te in _chain(trace):
        te.stack = traceback.StackSummary.from_list(
            [f for f in te.stack if f.filename == PROGRAM or f.filename.startswith("<lib.")])
    return trace


def _chain(te):
    while te is not None:
        yield te
        te = te.__cause__ or (None if te.__suppress_context__ else te.__context__)


def _location(exc):
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.filename == PROGRAM]
    return f"line {frames[-1].lineno}" if frames else None


def _module_hint(has_lib):
    names = ", ".join(gg.MODULE_NAMES) + (", and lib (the code you loaded)" if has_lib else "")
    return f"gg's modules are {names}; each is reached through `import gg`"


def _outcome(kind, message, location=None, code=None, operation=None):
    error = feedback.ProgramError(kind=kind, code=code, operation=operation, message=message, location=location)
    return feedback.ProgramOutcome(ok=False, error=error)


def _error_code(code):
    return getattr(wit_world.imports.types.ErrorCode, code.upper().replace("-", "_"))


class WitWorld(wit_world.WitWorld):
    def run(self, program, modules):
        _seal()  # a fresh instance per program: sealed once per run
        sys.addaudithook(_audit)
        sys.stdout = sys.stderr = _Output()
        sys.meta_path.insert(0, _Library(modules))
        linecache.cache[PROGRAM] = (len(program), None, program.splitlines(True), PROGRAM)
        try:
            try:
                code = compile(program, PROGRAM, "exec")
            except SyntaxError as exc:
                return _outcome(feedback.ErrorKind.COMPILE_ERROR, "".join(traceback.format_exception_only(exc)).rstrip(),
                                f"line {exc.lineno}" if exc.lineno else None)
            scope = {"__name__": "__main__", "__builtins__": builtins}
            try:
                exec(code, scope)
            except SystemExit as exc:
                if exc.code in (None, 0):
                    return feedback.ProgramOutcome(ok=True, error=None)
                return _outcome(feedback.ErrorKind.OTHER, f"SystemExit: {exc.code}", _location(exc))
            except ApiError as exc:
                return _outcome(feedback.ErrorKind.API_FAILURE, "".join(_own_frames(exc).format()).rstrip(),
                                _location(exc), _error_code(exc.code), exc.operation)
            except NameError as exc:
                # The layer raising the fault composes in the fact it implies: where gg's names live.
                exc.args = (f"{exc.args[0] if exc.args else exc}. {_module_hint(bool(modules))}",)
                return _outcome(feedback.ErrorKind.UNKNOWN_NAME, "".join(_own_frames(exc).format()).rstrip(),
                                _location(exc))
            except BaseException as exc:  # noqa: BLE001 — whatever the program threw is its outcome
                return _outcome(feedback.ErrorKind.OTHER, "".join(_own_frames(exc).format()).rstrip(), _location(exc))
            return feedback.ProgramOutcome(ok=True, error=None)
        finally:
            sys.stdout.flush()
