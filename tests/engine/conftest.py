"""Fixtures of the engine tests alone."""

import pytest


@pytest.fixture(scope="module")
def guest():
    """The Python guest, built (or read from var/) before a module's first program runs."""
    # Imported when the fixture runs, not when the conftest loads: wasmtime loaded from a conftest
    # (ahead of the test modules) made a guest's stack overflow kill pytest's process (SIGILL)
    # instead of trapping.
    from runs.engine.sandbox.guest import get_sandbox

    return get_sandbox()  # builds on first use when var/ holds no current artifact
