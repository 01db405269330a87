"""Fixtures of the run-page tests alone."""

import pytest

from tests.pages_helpers import load


@pytest.fixture
def run():
    """The authored pages fixture (tests/fixtures/streams/pages_run.ndjson), imported."""
    return load("pages")
