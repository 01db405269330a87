"""Fixtures every group uses: users with and without the launch permission, and their clients.
(Paths are `tests.paths`; each group's own helpers are `tests/<group>_helpers.py`.)"""

import pytest
from django.contrib.auth.models import Permission


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


def pytest_collection_modifyitems(config, items):
    """Browser tests run last: Playwright's sync API keeps an event loop running on the main
    thread for the rest of the session, where a later `asyncio.run()` would be refused."""
    e2e = [item for item in items if "e2e" in item.keywords]
    items[:] = [item for item in items if "e2e" not in item.keywords] + e2e
