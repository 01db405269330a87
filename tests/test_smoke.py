import pytest
from django.urls import reverse


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("runs:list"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


@pytest.mark.django_db
def test_logged_in_operator_sees_runs(viewer_client):
    response = viewer_client.get(reverse("runs:list"))
    assert response.status_code == 200
    assert b"Runs" in response.content
