"""First use of the launch form (issue 17): the untouched form launches a run that completes, a mode
switch converts the allowlist, "Fill from the capabilities" never writes a retired operation, every
launch error names its input by label, destructive actions ask first."""

import json

import pytest
from django.urls import reverse

from runs.launch.forms import LaunchForm
from runs.launch.starter import dry_run, starter_script
from runs.models import Run
from surfaces.catalogue import BY_ID, TOOLS_BY_NAME
from tests.launch_helpers import form_fields, querydict, wait_for_end

NEW = reverse("runs:new")


def blank_fields(client):
    return form_fields(client.get(NEW).content)


@pytest.mark.django_db(transaction=True)
def test_the_untouched_default_form_launches_a_run_that_completes(operator_client):
    fields = blank_fields(operator_client)
    assert fields["provider.kind"] == ["starter"]
    fields["task"] = ["Say hello."]  # a newcomer types a task and nothing else
    response = operator_client.post(NEW, fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    run = wait_for_end(Run.objects.get())
    assert run.status == Run.Status.COMPLETED


@pytest.mark.django_db
def test_the_default_form_validates_clean(operator_client):
    response = operator_client.post(reverse("runs:validate"), {**blank_fields(operator_client), "task": ["x"]})
    assert b"No problems found." in response.content


@pytest.mark.django_db(transaction=True)
def test_a_code_root_on_the_starter_completes_too(operator_client):
    fields = blank_fields(operator_client)
    fields.update({"task": ["Say hello."], "agents.0.executionMode": ["responses_as_code"],
                   "agents.0.allowlist": [""]})
    response = operator_client.post(NEW, fields)
    assert response.status_code == 302, response.content.decode()[:2000]
    run = wait_for_end(Run.objects.get(), timeout=120)
    assert run.status == Run.Status.COMPLETED


def test_the_starter_ends_every_profile_in_its_own_mode():
    script = starter_script([{"slug": "root", "executionMode": "tool_calling"},
                             {"slug": "coder", "executionMode": "responses_as_code", "programLanguage": "python"},
                             {"slug": "shell", "capabilities": [{"id": "fsm", "enabled": True}]}])
    assert set(script) == {"root", "coder"}  # a machine shell has no model to answer
    assert script["root"][0]["toolCalls"][0]["name"] == "finish"
    assert "gg.session.finish(" in script["coder"][0]["program"]


def _redraw(client, fields, action):
    response = client.post(NEW, {**fields, "action": [action]})
    assert response.status_code == 200
    return response.content.decode()


def _validate(client, fields):
    form = LaunchForm.from_post(querydict(fields))
    return form.validate(), form


@pytest.mark.django_db
def test_switching_to_code_converts_the_tool_allowlist_into_a_valid_profile(operator_client):
    fields = blank_fields(operator_client)
    fields.update({"task": ["t"], "agents.0.executionMode": ["responses_as_code"]})
    html = _redraw(operator_client, fields, "switch-mode:0")
    after = form_fields(html)
    operations = after["agents.0.allowlist"][0].split()
    assert operations and all(op in BY_ID and not BY_ID[op].retired for op in operations)
    assert "files.read_file" in operations and "views.open_file" in operations  # read_file's two operations
    assert "the allowlist was rewritten as operation ids" in html
    assert "Operations" in html  # the box is labelled for the new mode at once
    run_spec, form = _validate(operator_client, after)
    assert run_spec is not None, form.errors


@pytest.mark.django_db
def test_switching_back_converts_operations_into_tool_names(operator_client):
    fields = blank_fields(operator_client)
    fields.update({"task": ["t"], "agents.0.executionMode": ["responses_as_code"]})
    code = form_fields(_redraw(operator_client, fields, "switch-mode:0"))
    code["agents.0.executionMode"] = ["tool_calling"]
    html = _redraw(operator_client, code, "switch-mode:0")
    back = form_fields(html)
    tools = back["agents.0.allowlist"][0].split()
    assert tools and all(t in TOOLS_BY_NAME for t in tools)
    assert set(tools) == set(blank_fields(operator_client)["agents.0.allowlist"][0].split())
    run_spec, form = _validate(operator_client, back)
    assert run_spec is not None, form.errors


@pytest.mark.django_db
def test_fill_from_the_capabilities_never_writes_a_retired_operation(operator_client):
    fields = blank_fields(operator_client)
    fields.update({"task": ["t"], "agents.0.executionMode": ["responses_as_code"], "agents.0.allowlist": [""],
                   "agents.0.cap.agent-managed-context": ["on"]})
    filled = form_fields(_redraw(operator_client, fields, "fill-allowlist:0"))
    operations = filled["agents.0.allowlist"][0].split()
    assert "files.read_file" in operations and "views.close" in operations
    assert not [op for op in operations if BY_ID[op].retired]
    assert "files.read_text_file" not in operations and "views.current" not in operations
    run_spec, form = _validate(operator_client, filled)
    assert run_spec is not None, form.errors


BAD_INPUTS = {
    "agents.0.allowlist": (["shell\nnot_a_tool"], "Profile 1 (root) → Tools (tool calling), line 2"),
    "agents.0.slug": (["Bad Slug!"], "Profile 1 (Bad Slug!) → Slug"),
    "limits.maxTurns": (["-3"], "Limits → Max turns (per agent)"),
    "provider.kind": (["script"], "Provider → Script"),
    "agents.0.cap.memories.params.scope": (["nowhere"], "Profile 1 (root) → memories → scope"),
    "agents.0.hooks": (['[{"event": "agent-stop", "action": {"type": "command", "command": "make"}}]'],
                       "Profile 1 (root) → Hooks (JSON)"),
    "hooks": (['[{"event": "agent-stop", "action": {"type": "built-in", "script": "trace"}}]'], "Session hooks (JSON)"),
}


@pytest.mark.django_db
@pytest.mark.parametrize("name", list(BAD_INPUTS))
def test_every_launch_error_names_its_input_by_label(operator_client, name):
    fields = blank_fields(operator_client)
    value, label = BAD_INPUTS[name]
    fields.update({"task": ["t"], name: value})
    if name == "provider.kind":
        fields["provider.script"] = ["[1, 2]"]
    response = operator_client.post(NEW, fields)
    assert response.status_code == 400
    html = response.content.decode()
    _, form = _validate(operator_client, fields)
    assert form.errors
    for error in form.errors:
        assert error["label"] and error["label"] != error["field"], error
        assert not error["label"].startswith(("agents[", "agents.")), error
    assert label in html.replace("&gt;", ">").replace("&#x27;", "'")


def test_an_error_with_no_input_is_still_named_in_words():
    form = LaunchForm.blank()
    form.add_error("nowhere.at.all", "odd")
    assert form.errors[0]["label"] == "The run as a whole"


@pytest.mark.django_db
def test_overwriting_a_configuration_of_another_owner_asks(operator_client, operator, django_user_model):
    """With the permission to replace another's (runs.delete_savedconfiguration; without it the save is
    refused: test_launch)."""
    from django.contrib.auth.models import Permission

    from runs.models import SavedConfiguration

    operator.user_permissions.add(Permission.objects.get(codename="delete_savedconfiguration"))
    other = django_user_model.objects.create_user("someone-else")
    theirs = SavedConfiguration.objects.create(name="shared", spec={"agents": []}, created_by=other)
    fields = {**blank_fields(operator_client), "task": ["t"], "action": ["save"], "configuration.name": ["shared"]}
    asked = operator_client.post(NEW, fields)
    html = asked.content.decode()
    assert asked.status_code == 409 and 'id="overwrite-confirm"' in html and "someone-else" in html
    theirs.refresh_from_db()
    assert theirs.spec == {"agents": []}  # nothing replaced yet
    operator_client.post(NEW, {**fields, "configuration.replace": [str(theirs.pk)]})
    theirs.refresh_from_db()
    assert theirs.spec["agents"][0]["slug"] == "root"


@pytest.mark.django_db
def test_saving_your_loaded_configuration_again_does_not_ask(operator_client, operator):
    from runs.models import SavedConfiguration

    mine = SavedConfiguration.objects.create(name="mine", spec={"task": "t", "agents": [
        {"slug": "root", "executionMode": "tool_calling", "capabilities": []}],
        "provider": {"kind": "scripted", "demo": "review"}}, created_by=operator)
    loaded = form_fields(operator_client.get(NEW + f"?configuration={mine.pk}").content)
    assert loaded["configuration.name"] == ["mine"] and loaded["configuration.loaded"] == [str(mine.pk)]
    saved = operator_client.post(NEW, {**loaded, "task": ["changed"], "action": ["save"]})
    assert saved.status_code == 302
    mine.refresh_from_db()
    assert mine.spec["task"] == "changed"


@pytest.mark.django_db
def test_saving_without_a_name_says_nothing_was_saved(operator_client):
    response = operator_client.post(NEW, {**blank_fields(operator_client), "task": ["t"], "action": ["save"]})
    html = response.content.decode()
    assert response.status_code == 400
    assert "nothing was saved" in html and "nothing was launched" not in html
    assert "Save as a configuration → Configuration name" in html and "a configuration needs a name" in html


@pytest.mark.django_db
def test_rerun_of_a_run_with_no_capability_set_says_so_and_starts_close(operator_client):
    from runs.ingest import writer as ingest

    run = Run.objects.create(name="bare")
    ingest.append(run, [{"type": "agent_spawned", "agentId": "root", "profileId": "lead", "depth": 0},
                        {"type": "agent_surface", "agentId": "root", "executionMode": "responses_as_code",
                         "programLanguage": "python", "apis": [], "tools": []}])
    response = operator_client.get(reverse("runs:rerun", args=[run.pk]))
    html = response.content.decode()
    assert "carried no capability set" in html
    fields = form_fields(html)
    assert fields["agents.0.slug"] == ["lead"] and fields["agents.0.executionMode"] == ["responses_as_code"]
    assert fields["provider.kind"] == ["starter"]


@pytest.mark.django_db
def test_a_dry_run_reads_the_script_against_the_profiles_and_launches_nothing(operator_client):
    fields = blank_fields(operator_client)
    fields.update({"task": ["t"], "provider.kind": ["demo"], "provider.demo": ["review"], "action": ["dry-run"]})
    html = operator_client.post(NEW, fields).content.decode()
    assert "Dry run: nothing was launched" in html and not Run.objects.exists()
    # the blank root's slug is `root`; the review demo scripts `author` and `reviewer`
    assert "no replies: its first turn fails (model_retry_exhausted)" in html
    assert "<code>author</code>" in html and "<code>reviewer</code>" in html  # unused entries named


def test_the_dry_run_finds_where_a_script_runs_out():
    spec = {"agents": [{"slug": "lead", "executionMode": "tool_calling"},
                       {"slug": "helper", "executionMode": "tool_calling"}],
            "provider": {"kind": "scripted", "script": {
                "lead": [{"toolCalls": [{"name": "spawn_subagent", "args": {"agent": "helper", "prompt": "p"}}]},
                         {"toolCalls": [{"name": "wait_for_subagents", "args": {}}]}],
                "helper": [{"toolCalls": [{"name": "finish", "args": {"summary": "done"}}]}]}}}
    result = dry_run(spec)
    lead, helper = result["profiles"]
    assert lead["runs_out"] and "runs out after reply 2" in lead["verdict"]
    assert lead["replies"][0]["calls"] == ["spawn_subagent → helper"]
    assert not helper["runs_out"] and helper["replies"][0]["ends"]
    assert dry_run({"agents": [], "provider": {"kind": "openai"}}) is None


@pytest.mark.django_db
def test_every_limit_and_parameter_says_what_empty_or_zero_means(operator_client):
    html = operator_client.get(NEW).content.decode()
    assert 'name="limits.maxCost"' in html and "no cost cap" in html
    assert "empty: no cap on any agent&#x27;s turns" in html
    assert html.count("0: unlimited") >= 5  # the memories caps


@pytest.mark.django_db
def test_hooks_are_edited_per_profile_and_a_rerun_carries_them(operator_client):
    """The launch form's Hooks box per profile (and the run's session hooks): a re-run of the gate demo
    shows the implementer's ending gate there, and submitting the form writes it back unchanged."""
    from runs.demo import demo_spec
    from runs.models import Run

    original = demo_spec("gate")
    run = Run.objects.create(name="gated", source=Run.Source.ENGINE, launch_spec=original)
    fields = form_fields(operator_client.get(reverse("runs:rerun", args=[run.pk])).content)
    assert json.loads(fields["agents.1.hooks"][0]) == original["agents"][1]["hooks"]
    assert fields["agents.0.hooks"] == [""] and fields["hooks"] == [""]
    _, form = _validate(operator_client, fields)
    assert not form.errors
    assert form.spec["agents"][1]["hooks"] == original["agents"][1]["hooks"] and "hooks" not in form.spec["agents"][0]
