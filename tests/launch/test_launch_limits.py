"""A launch form of many profiles is read whole; one past the console's field limit is said, not a bare 400."""

import pytest
from django.urls import reverse

from runs.launch.fields import default_profile
from runs.launch.starter import starter_script
from runs.models import Run, SavedConfiguration
from tests.launch_helpers import form_fields

PROFILES = 19


@pytest.fixture
def large_form(operator_client, operator, settings, tmp_path):
    """The fields of a form loaded from a configuration of 19 profiles, as a browser submits them."""
    settings.VAR_DIR = tmp_path
    agents = [default_profile("root", "Root")]
    agents += [default_profile(f"agent-{n}", f"Agent {n}") for n in range(1, PROFILES)]
    spec = {"task": "Many hands.", "agents": agents, "limits": {},
            "provider": {"kind": "scripted", "script": starter_script(agents)}}
    saved = SavedConfiguration.objects.create(name="large", spec=spec, created_by=operator)
    fields = form_fields(operator_client.get(reverse("runs:new"), {"configuration": saved.pk}).content)
    assert sum(len(values) for values in fields.values()) > 1_000  # past Django's default limit
    return fields


@pytest.mark.django_db
def test_a_form_of_nineteen_profiles_is_checked_and_launched(operator_client, large_form):
    inline = operator_client.post(reverse("runs:validate"), large_form, HTTP_HX_REQUEST="true")
    assert inline.status_code == 200 and "No problems found." in inline.content.decode()
    assert operator_client.post(reverse("runs:new"), {**large_form, "action": "launch"}).status_code == 302
    assert len(Run.objects.get().launch_spec["agents"]) == PROFILES


@pytest.mark.django_db
def test_a_form_past_the_field_limit_is_told_so(operator_client, large_form, settings):
    settings.DATA_UPLOAD_MAX_NUMBER_FIELDS = 500
    said = "The form sent more fields than the console reads in one request (500, DATA_UPLOAD_MAX_NUMBER_FIELDS)"
    inline = operator_client.post(reverse("runs:validate"), large_form, HTTP_HX_REQUEST="true").content.decode()
    assert 'id="launch-errors" hx-swap-oob="true"' in inline  # the form's summary, the form left as typed
    assert "Launch would be refused the same way" in inline and said in inline
    launch = operator_client.post(reverse("runs:new"), {**large_form, "action": "launch"})
    assert launch.status_code == 400 and said in launch.content.decode()
    assert "the browser&#x27;s Back button returns to the form" in launch.content.decode()
    assert not Run.objects.exists()
