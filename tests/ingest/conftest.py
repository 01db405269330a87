"""Fixtures of the write-path tests: a fresh PostgreSQL database for the scale path."""

import os
import uuid

import pytest

from tests.ingest_helpers import PG, manage


@pytest.fixture
def pg_env(tmp_path):
    """The environment of a `manage.py` on a fresh PostgreSQL database of its own (dropped after)."""
    psycopg = pytest.importorskip("psycopg")
    try:
        admin = psycopg.connect(PG + "postgres", autocommit=True, connect_timeout=2)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"PostgreSQL does not answer ({exc}); scripts/services starts it")
    db = f"gg_ingest_{uuid.uuid4().hex[:8]}"
    admin.execute(f'CREATE DATABASE "{db}"')
    env = {**os.environ, "DATABASE_URL": PG + db, "GG_CONSOLE_VAR": str(tmp_path),
           "DJANGO_SETTINGS_MODULE": "gg_console.settings"}  # fmt: skip
    env.pop("REDIS_URL", None)
    try:
        manage(env, "migrate", "--noinput")
        yield env
    finally:
        admin.execute(f'DROP DATABASE "{db}" WITH (FORCE)')
        admin.close()
