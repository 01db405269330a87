"""Fixtures every group uses: users with and without the launch permission, and their clients; a
fresh PostgreSQL database for the scale path; reads that take no table locks in threaded tests.
(Paths are `tests.paths`; each group's own helpers are `tests/<group>_helpers.py`.)"""

import os
import uuid

import pytest
from django.contrib.auth.models import Permission

from tests.ingest_helpers import PG, manage


@pytest.fixture
def viewer(django_user_model):
    """A logged-in operator who may look but not launch."""
    return django_user_model.objects.create_user("viewer", password="viewer-pass-123")


@pytest.fixture
def operator(django_user_model):
    """An operator holding runs.add_run (launch, cancel, save configurations)."""
    user = django_user_model.objects.create_user("operator", password="operator-pass-123")
    user.user_permissions.add(Permission.objects.get(codename="add_run", content_type__app_label="runs"))
    return user


@pytest.fixture
def viewer_client(client, viewer):
    client.force_login(viewer)
    return client


@pytest.fixture
def operator_client(client, operator):
    client.force_login(operator)
    return client


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


@pytest.fixture
def local_redis(settings):
    """The Redis path's settings (REDIS_URL on the local Redis) and a client of it; skipped without it."""
    import redis

    settings.REDIS_URL = "redis://127.0.0.1:6379/0"
    client = redis.Redis.from_url(settings.REDIS_URL, socket_connect_timeout=1)
    try:
        client.ping()
    except redis.RedisError as exc:
        pytest.skip(f"Redis does not answer ({exc})")
    return client


@pytest.fixture(autouse=True)
def unlocked_reads(request):
    """Threads of a transactional test (the launch worker, the feed's window readers, a live server)
    share pytest-django's in-memory SQLite (shared cache), where a reader's table lock makes a writer
    fail at once instead of waiting (the file database under WAL has no such problem). Readers that
    take no table locks keep the threads out of each other's way."""
    from django.db import connection
    from django.db.backends.signals import connection_created

    if "transactional_db" not in request.fixturenames and not any(
        m.kwargs.get("transaction") for m in request.node.iter_markers("django_db")
    ):
        yield
        return

    def unlock(sender, connection, **kwargs):
        if connection.vendor == "sqlite":
            connection.cursor().execute("PRAGMA read_uncommitted = 1")

    connection_created.connect(unlock)
    connection.ensure_connection()
    unlock(None, connection)
    yield
    connection_created.disconnect(unlock)


def pytest_collection_modifyitems(config, items):
    """Browser tests run last: Playwright's sync API keeps an event loop running on the main
    thread for the rest of the session, where a later `asyncio.run()` would be refused."""
    e2e = [item for item in items if "e2e" in item.keywords]
    items[:] = [item for item in items if "e2e" not in item.keywords] + e2e
