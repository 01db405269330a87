"""The launch form's provider: settings that could never answer the root agent are the Provider's field
errors at Launch and in the live check (the dry run's reading), not a run failing at once with model_error."""

import html
import json
import re

import pytest
from django.urls import reverse

from runs.models import Run
from tests.launch_helpers import form_fields, wait_for_end

FINISH = {"toolCalls": [{"name": "finish", "args": {"summary": "done"}}]}


@pytest.fixture
def fields(operator_client):
    fields = form_fields(operator_client.get(reverse("runs:new")).content)  # the default profile: root
    fields["task"] = ["Do the work."]
    return fields


def errors_of(body, name):
    slot = re.search(r'id="err-f-%s"[^>]*>(.*?)</ul>' % re.sub(r"[^A-Za-z0-9_-]", "-", name), body, re.S)
    return [html.unescape(m) for m in re.findall(r"<li>(.*?)</li>", slot.group(1), re.S)] if slot else []


def refused(client, fields, name):
    """The one error on `name`, the same in the live check and at Launch; nothing launched, the task kept."""
    inline = client.post(reverse("runs:validate"), fields, HTTP_HX_REQUEST="true").content.decode()
    launch = client.post(reverse("runs:new"), {**fields, "action": "launch"})
    body = launch.content.decode()
    assert launch.status_code == 400 and not Run.objects.exists()
    assert errors_of(inline, name) == errors_of(body, name) and len(errors_of(body, name)) == 1
    assert "<b>1 problem</b>" in body and ">Do the work.</textarea>" in body
    return errors_of(body, name)[0]


@pytest.mark.django_db
@pytest.mark.parametrize("demo, profiles", [("arms", "ts-coder, py-coder, reader"), ("review", "author, reviewer")])
def test_a_demo_whose_script_has_no_reply_for_the_root_profile_is_refused(operator_client, fields, demo, profiles):
    fields.update({"provider.kind": ["demo"], "provider.demo": [demo]})
    message = refused(operator_client, fields, "provider.demo")
    assert f"the {demo} demo's script has replies for its own profiles ({profiles})" in message
    assert "root profile 'root'" in message and "Start from the demo" in message


@pytest.mark.django_db
@pytest.mark.parametrize("script, words", [
    ("", "the script has no replies: the root profile 'root' has none"),
    ("{}", "the script has no replies: the root profile 'root' has none"),
    ('{"root": []}', "the script has no replies: the root profile 'root' has none"),
    ('{"nobody": [{"text": "hi"}]}', "no replies for the root profile 'root' (it has replies for nobody)"),
])
def test_a_script_without_a_reply_for_the_root_profile_is_refused(operator_client, fields, script, words):
    fields.update({"provider.kind": ["script"], "provider.script": [script]})
    assert words in refused(operator_client, fields, "provider.script")


@pytest.mark.django_db
def test_an_unknown_provider_kind_is_refused_naming_the_kinds(operator_client, fields):
    fields["provider.kind"] = ["bogus"]
    assert refused(operator_client, fields, "provider.kind") == ("'bogus' is no provider kind; one of: starter, demo, "
                                                                 "script, openai")


@pytest.mark.django_db
def test_a_script_that_does_not_parse_is_that_error_alone(operator_client, fields):
    fields.update({"provider.kind": ["script"], "provider.script": ["{nope"]})
    assert "the script has no replies" not in refused(operator_client, fields, "provider.script")


@pytest.mark.django_db(transaction=True)
def test_the_root_agents_own_id_answers_whatever_the_root_profiles_slug(operator_client, fields, settings, tmp_path):
    """The engine's root agent is `root`: a script entry under that id serves a root profile of any slug."""
    settings.VAR_DIR = tmp_path  # the run's workspace, not the checkout's var/
    fields.update({"agents.0.slug": ["lead"], "provider.kind": ["script"],
                   "provider.script": [json.dumps({"root": [FINISH]})]})
    dry = operator_client.post(reverse("runs:new"), {**fields, "action": "dry-run"}).content.decode()
    assert "1 instance can end its session" in dry and "never used" not in dry
    assert operator_client.post(reverse("runs:new"), {**fields, "action": "launch"}).status_code == 302
    assert wait_for_end(Run.objects.get()).status == "completed"
