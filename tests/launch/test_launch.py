"""Launch forms: the form <-> spec round trip, launching on the worker thread, cancel, re-run,
saved configurations, permissions, the interrupted sweep. The engine really runs."""

import json

import pytest
from django.contrib.auth.models import Permission
from django.urls import reverse

from runs.launch import dispatch, services
from runs.engine.validation import validate_spec
from runs.launch.forms import LaunchForm
from runs.models import Event, Run, SavedConfiguration
from tests.launch_helpers import form_fields, launch_slow_run, querydict, retry_locked, wait_for_end, zip_upload


@pytest.fixture(autouse=True)
def private_var(settings, tmp_path):
    """Workspaces go under a per-test var/, never the checkout's."""
    settings.VAR_DIR = tmp_path / "var"


def demo_form(client, name="review"):
    """The launch form pre-filled from a shipped demo, as a browser would submit it."""
    response = client.get(reverse("runs:new") + f"?demo={name}")
    assert response.status_code == 200
    return form_fields(response.content)


def event_types(run):
    return list(run.events.order_by("seq").values_list("type", flat=True))


# ---- permissions ---------------------------------------------------------------------------

@pytest.mark.django_db
def test_viewer_is_refused_every_launch_action_with_a_clear_page(viewer_client, operator):
    run = Run.objects.create(name="r", source=Run.Source.ENGINE, status=Run.Status.RUNNING)
    saved = SavedConfiguration.objects.create(name="c", spec={"task": "t"})
    for method, url in [
        ("get", reverse("runs:new")), ("post", reverse("runs:new")), ("post", reverse("runs:validate")),
        ("post", reverse("runs:cancel", args=[run.pk])), ("get", reverse("runs:rerun", args=[run.pk])),
        ("post", reverse("runs:configuration_delete", args=[saved.pk])),
    ]:
        response = getattr(viewer_client, method)(url, {"task": "x", "action": "launch"})
        assert response.status_code == 403, url
        assert b"runs.add_run" in response.content
    run.refresh_from_db()
    assert not run.cancel_requested and Run.objects.count() == 1 and SavedConfiguration.objects.count() == 1
    # Looking is allowed: the list of configurations, without the buttons; no "New run" link.
    page = viewer_client.get(reverse("runs:configurations"))
    assert page.status_code == 200 and b">c<" in page.content
    assert b"Delete" not in page.content and reverse("runs:new").encode() not in page.content
    SavedConfiguration.objects.all().delete()  # the empty state points nowhere a viewer cannot go
    page = viewer_client.get(reverse("runs:configurations"))
    assert reverse("runs:new").encode() not in page.content and b"needs the runs.add_run permission" in page.content


@pytest.mark.django_db
def test_anonymous_is_sent_to_login(client):
    response = client.get(reverse("runs:new"))
    assert response.status_code == 302 and "/login/" in response["Location"]


@pytest.mark.django_db
def test_operator_sees_the_new_run_link_and_the_form(operator_client):
    response = operator_client.get(reverse("runs:list"))
    assert reverse("runs:new").encode() in response.content
    fields = form_fields(operator_client.get(reverse("runs:new")).content)
    assert fields["agents.0.slug"] == ["root"]
    assert fields["agents.0.executionMode"] == ["tool_calling"]
    # The allowlist is pre-filled from the default capabilities, in the tool vocabulary.
    assert "read_file" in fields["agents.0.allowlist"][0].split()
    assert fields["agents.0.cap.memories.implementation"] == ["scratchpad"]
    assert fields["agents.0.cap.memories.params.scope"] == ["isolated"]


# ---- launch on the worker thread --------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_launch_runs_on_the_worker_thread_and_lands_on_the_live_page(operator_client, operator):
    fields = demo_form(operator_client, "review")
    response = operator_client.post(reverse("runs:new"), fields)
    run = Run.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("runs:feed", args=[run.pk])
    assert run.source == Run.Source.ENGINE and run.created_by == operator
    assert run.launch_spec["provider"] == {"kind": "scripted", "demo": "review"}
    wait_for_end(run)
    assert run.status == Run.Status.COMPLETED
    types = event_types(run)
    assert types[0] == "session_started" and types[-1] == "session_ended"
    ended = json.loads(run.events.filter(type="session_ended").get().raw)
    assert ended["status"] == "completed"
    assert run.agents.count() == 3  # author and two reviewer instances
    assert run.agents.get(agent_id="root").tool_calls["spawn_subagent"] == 2


@pytest.mark.django_db(transaction=True)
def test_launch_with_a_zip_workspace(operator_client, settings):
    buffer = zip_upload("ws.zip", {"docs/plan.md": "the plan\n"})
    fields = demo_form(operator_client, "review")
    response = operator_client.post(reverse("runs:new"), {**fields, "workspace_zip": buffer})
    assert response.status_code == 302
    run = wait_for_end(Run.objects.get())
    workspace = settings.VAR_DIR / "workspaces" / str(run.pk)
    assert (workspace / "docs" / "plan.md").read_text() == "the plan\n"
    assert (workspace / "greeting.txt").read_text() == "hello, world\n"  # the demo wrote beside it


@pytest.mark.django_db
def test_a_refused_zip_is_named_with_the_other_problems_and_nothing_is_created(operator_client, settings):
    buffer = zip_upload("bad.zip", {"../escape.txt": "x"})
    fields = demo_form(operator_client, "review")
    fields["task"] = [""]
    response = operator_client.post(reverse("runs:new"), {**fields, "workspace_zip": buffer})
    assert response.status_code == 400
    body = response.content.decode()
    assert "paths with &#x27;..&#x27; are refused" in body and "the task (the root agent&#x27;s prompt) is required" in body
    assert Run.objects.count() == 0
    assert not (settings.VAR_DIR / "workspaces").exists() or not any((settings.VAR_DIR / "workspaces").iterdir())


@pytest.mark.django_db
def test_a_made_up_run_name_taken_meanwhile_is_made_up_again_not_refused(operator_client, monkeypatch):
    """Launches in the same second (twenty at once from a script) can make up the same name; the
    operator never chose it, so the launch goes on under another. A name they chose is refused."""
    Run.objects.create(name="author-taken", source=Run.Source.ENGINE)
    made_up = iter(["author-taken", "author-free"])  # the random part drew a name in use first
    monkeypatch.setattr(services, "_fresh_name", lambda slug: next(made_up))
    fields = demo_form(operator_client, "review")
    assert fields.get("name", [""]) == [""]  # the demo leaves the name to be made up
    response = operator_client.post(reverse("runs:new"), fields)
    assert response.status_code == 302, response.content.decode()
    assert Run.objects.get(name="author-free").status == Run.Status.QUEUED
    chosen = operator_client.post(reverse("runs:new"), {**fields, "name": ["author-taken"]})
    assert chosen.status_code == 400 and "already exists" in chosen.content.decode()
    assert Run.objects.count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("members, words", [
    (["a.txt", "a.txt"], "collides with another member"), (["a", "a/b"], "collides with the file"),
    (["."], "names no file"), (["n" * 300], "over 255 bytes")], ids=["collision", "nested", "dot", "long"])
def test_a_zip_the_filesystem_would_refuse_is_a_named_error_not_a_500(operator_client, members, words):
    import io
    import warnings
    import zipfile

    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w") as archive:
        warnings.simplefilter("ignore")
        for name in members:
            archive.writestr(name, "x")
    buffer.seek(0)
    buffer.name = "odd.zip"
    response = operator_client.post(reverse("runs:new"), {**demo_form(operator_client, "review"), "workspace_zip": buffer})
    assert response.status_code == 400 and words in response.content.decode()
    assert Run.objects.count() == 0


# ---- cancel ----------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_cancel_stops_a_running_run_at_the_turn_boundary_keeping_its_events(operator_client):
    run = launch_slow_run(operator_client)
    assert run.status == Run.Status.RUNNING
    assert b'id="cancel-run"' in operator_client.get(reverse("runs:feed", args=[run.pk])).content
    # The service the Cancel button calls (the view is exercised on a queued run below); retried
    # because a write meeting the worker's write fails at once on the shared in-memory test database.
    retry_locked(lambda: services.run_cancel(run))
    wait_for_end(run)
    assert run.status == Run.Status.CANCELED
    assert run.turn_count < 50
    assert event_types(run)[-1] == "session_ended"
    assert json.loads(run.events.filter(type="session_ended").get().raw)["status"] == "canceled"
    assert Event.objects.filter(run=run, type="turn_started").count() >= 2
    assert b'id="cancel-run"' not in operator_client.get(reverse("runs:feed", args=[run.pk])).content


@pytest.mark.django_db(transaction=True)  # the worker closes its connection, as a worker's thread does
def test_cancel_button_of_a_queued_run_cancels_it_on_the_spot(operator_client):
    run = Run.objects.create(name="q", source=Run.Source.ENGINE, status=Run.Status.QUEUED)
    feed = reverse("runs:feed", args=[run.pk])
    assert b'id="cancel-run"' in operator_client.get(feed).content
    asked = operator_client.post(reverse("runs:cancel", args=[run.pk]), {"next": feed})
    assert asked.status_code == 200 and b'id="confirm-yes"' in asked.content  # Cancel asks first
    run.refresh_from_db()
    assert run.status == Run.Status.QUEUED
    response = operator_client.post(reverse("runs:cancel", args=[run.pk]), {"next": feed, "confirm": "yes"})
    assert response.status_code == 302 and response["Location"] == feed
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELED and run.cancel_requested
    dispatch.execute(run.pk)  # a worker that picks it up afterwards starts nothing
    run.refresh_from_db()
    assert run.status == Run.Status.CANCELED and run.last_seq == 0
    assert not services.run_cancel(run)  # ended: nothing to cancel
    # Back to a path on this console only: not off site, and not a bare word redirect() would read
    # as a view name (a 500 before runs.access.return_path).
    for target in ("https://evil.example/", "//evil.example/x", "名前", "²", "runs"):
        answer = operator_client.post(reverse("runs:cancel", args=[run.pk]), {"next": target, "confirm": "yes"})
        assert (answer.status_code, answer["Location"]) == (302, feed), target
    agents = reverse("runs:agents", args=[run.pk])
    assert operator_client.post(reverse("runs:cancel", args=[run.pk]),
                                {"next": agents, "confirm": "yes"})["Location"] == agents


@pytest.mark.django_db(transaction=True)
def test_a_run_handed_to_two_workers_is_executed_once(operator_client):
    """A message delivered twice: the first worker reads the run queued, then the second runs it whole
    before the first goes on. The first must start nothing (its read is stale: only the claim counts)."""
    import threading

    from django.db import connection

    operator_client.post(reverse("runs:new"), demo_form(operator_client, "review"))
    run = wait_for_end(Run.objects.get())
    twin = Run.objects.create(name="twin", source=Run.Source.ENGINE, status=Run.Status.QUEUED,
                              launch_spec=run.launch_spec, created_by=run.created_by)
    has_read, other_done = threading.Event(), threading.Event()

    def pause_after_reading_the_run(execute, sql, params, many, context):
        result = execute(sql, params, many, context)
        if not has_read.is_set() and sql.startswith("SELECT") and '"runs_run"' in sql:
            has_read.set()
            other_done.wait(60)
        return result

    def first_worker():
        with connection.execute_wrapper(pause_after_reading_the_run):
            dispatch.execute(twin.pk)

    first = threading.Thread(target=first_worker)
    first.start()
    assert has_read.wait(30)
    dispatch.execute(twin.pk)  # the second worker, while the first holds its stale read
    other_done.set()
    first.join(60)
    twin.refresh_from_db()
    assert twin.status == Run.Status.COMPLETED
    assert event_types(twin).count("session_started") == 1 == event_types(twin).count("session_ended")


# ---- re-run, configurations ----------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_rerun_with_edits_reproduces_the_same_configuration(operator_client):
    fields = demo_form(operator_client, "delegation")
    fields["limits.maxErrorRate"], fields["limits.errorRateWindow"] = ["0.25"], ["8"]
    fields["agents.1.cap.memories.params.scope"] = ["shared"]
    assert operator_client.post(reverse("runs:new"), fields).status_code == 302
    first = wait_for_end(Run.objects.get())
    assert first.status == Run.Status.COMPLETED

    again = form_fields(operator_client.get(reverse("runs:rerun", args=[first.pk])).content)
    assert operator_client.post(reverse("runs:new"), again).status_code == 302
    second = Run.objects.exclude(pk=first.pk).get()
    assert second.launch_spec == first.launch_spec
    assert second.launch_spec["agents"][1]["capabilities"][0]["params"]["scope"] == "shared"
    assert wait_for_end(second).status == Run.Status.COMPLETED


@pytest.mark.django_db
def test_rerun_with_edits_is_offered_only_for_a_run_with_a_launch_spec(operator_client):
    spec = {"task": "Read.", "agents": [{"slug": "lead", "name": "Lead", "modelId": "scripted/lead"}],
            "provider": {"kind": "scripted", "script": {"lead": []}}}
    launched = Run.objects.create(name="launched", source=Run.Source.ENGINE, launch_spec=spec,
                                  status=Run.Status.COMPLETED)
    imported = Run.objects.create(name="imported", source=Run.Source.IMPORT, status=Run.Status.COMPLETED,
                                  capability_set={"agents": [{"slug": "lead"}]})
    pushed = Run.objects.create(name="pushed", source=Run.Source.API)
    for run, offered in ((launched, True), (imported, False), (pushed, False)):
        for page in ("runs:detail", "runs:feed", "runs:header"):
            html = operator_client.get(reverse(page, args=[run.pk])).content.decode()
            assert ("Re-run with edits" in html) is offered, (run.name, page)
            assert (reverse("runs:rerun", args=[run.pk]) in html) is offered, (run.name, page)


@pytest.mark.django_db
def test_rerun_of_an_imported_run_reads_its_gg_capability_set(operator_client):
    gg_set = {"agents": [
        {"id": "p1", "slug": "lead", "name": "Lead", "modelId": "mock/echo", "openingTurn": {"modules": []},
         "capabilities": [{"id": "read-file", "enabled": True, "implementation": "hard-cap", "params": {"lineCap": 40}},
                          {"id": "responses-as-code", "enabled": True,
                           "params": {"language": "python", "docViewTypes": "return+parameters+errors"}}],
         "operations": ["files.read_file"],
         "subagents": [{"agentId": "lead", "scopes": ["subagent"]}]}],
        "limits": {"maxParallel": 2}}
    run = Run.objects.create(name="imported", capability_set=gg_set)
    fields = form_fields(operator_client.get(reverse("runs:rerun", args=[run.pk])).content)
    assert fields["agents.0.slug"] == ["lead"]
    assert fields["agents.0.executionMode"] == ["responses_as_code"]
    assert fields["agents.0.docViewTypes"] == ["return", "parameters", "errors"]
    assert fields["agents.0.cap.read-file.implementation"] == ["hard-cap"]
    assert fields["agents.0.cap.read-file.params.lineCap"] == ["40"]
    assert fields["agents.0.allowlist"] == ["files.read_file"]
    assert fields["agents.0.subagents.0.agent"] == ["lead"]
    assert fields["limits.maxParallel"] == ["2"]
    form = LaunchForm.from_post(querydict({**fields, "task": ["again"]}))
    assert form.validate() is not None, form.errors


@pytest.mark.django_db
def test_rerun_carries_the_fields_the_form_has_no_inputs_for(operator_client):
    """gg's openingTurn, hooks, customInstructions, loopDetection, modelSlots, engine, maxCost: kept as
    written through the form, so the re-run's spec is the original's."""
    profile = {"slug": "lead", "name": "Lead", "modelId": "scripted/lead", "executionMode": "tool_calling",
               "capabilities": [{"id": "read-file", "enabled": True, "implementation": "hard-cap",
                                 "params": {"lineCap": 40}}],
               "tools": ["read_file"],
               "openingTurn": {"modules": ["memories"], "functions": []}, "customInstructions": "Be brief.",
               "hooks": [{"event": "agent-stop", "action": {"type": "command", "command": "echo hi", "timeoutSecs": 5}}], "loopDetection": {"window": 4}, "modelSlots": {"fast": "m"}}
    original = {"task": "Read.", "agents": [profile], "limits": {"maxTurns": 3, "maxCost": 0.5},
                "provider": {"kind": "scripted", "script": {"lead": []}}, "engine": "builtin",
                "modelSlots": {"default": "scripted/lead"}}
    assert validate_spec(original)[1] == []
    run = Run.objects.create(name="carried", source=Run.Source.ENGINE, launch_spec=original)
    fields = form_fields(operator_client.get(reverse("runs:rerun", args=[run.pk])).content)
    assert json.loads(fields["agents.0.extra"][0])["openingTurn"] == profile["openingTurn"]
    form = LaunchForm.from_post(querydict(fields))
    assert form.validate() is not None, form.errors
    assert form.spec == original

    # Edited in the form: a field with its own input is refused there, named with the other problems.
    fields["agents.0.extra"] = [json.dumps({"slug": "x", "customInstructions": "Be terse."})]
    fields["limits.extra"] = ["[1]"]
    form = LaunchForm.from_post(querydict(fields))
    assert form.validate() is None
    assert form.errors_for("agents.0.extra") == ["'slug' has its own input; it is not written here"]
    assert form.errors_for("limits.extra") == ["a JSON object of further fields"]
    assert form.spec["agents"][0]["customInstructions"] == "Be terse."


@pytest.mark.django_db
def test_saved_configurations_save_list_load_delete(operator_client):
    fields = demo_form(operator_client, "review")
    fields.update({"action": ["save"], "configuration.name": ["Review pair"],
                   "configuration.description": ["author + reviewer"], "agents.0.name": ["Writer"]})
    response = operator_client.post(reverse("runs:new"), fields)
    assert response.status_code == 302 and response["Location"] == reverse("runs:configurations")
    saved = SavedConfiguration.objects.get()
    assert saved.description == "author + reviewer" and saved.spec["agents"][0]["name"] == "Writer"
    assert "name" not in saved.spec
    listing = operator_client.get(reverse("runs:configurations")).content.decode()
    assert "Review pair" in listing and "author + reviewer" in listing

    loaded = form_fields(operator_client.get(reverse("runs:new") + f"?configuration={saved.pk}").content)
    assert loaded["agents.0.name"] == ["Writer"] and loaded["agents.1.slug"] == ["reviewer"]

    # Saving under a name another configuration holds asks first; agreeing replaces it. A nameless
    # or invalid save is refused inline.
    fields["agents.0.name"] = ["Author"]
    asked = operator_client.post(reverse("runs:new"), fields)
    assert asked.status_code == 409 and b'id="overwrite-confirm"' in asked.content
    assert SavedConfiguration.objects.get().spec["agents"][0]["name"] == "Writer"
    operator_client.post(reverse("runs:new"), {**fields, "configuration.replace": [str(saved.pk)]})
    assert SavedConfiguration.objects.get().spec["agents"][0]["name"] == "Author"
    fields.update({"configuration.name": [""], "agents.1.slug": ["author"]})
    refused = operator_client.post(reverse("runs:new"), fields)
    assert refused.status_code == 400
    assert b"a configuration needs a name" in refused.content and b"duplicate slug" in refused.content

    asked = operator_client.post(reverse("runs:configuration_delete", args=[saved.pk]))
    assert asked.status_code == 200 and b'id="confirm-yes"' in asked.content  # Delete asks first
    assert SavedConfiguration.objects.exists()
    deleted = operator_client.post(reverse("runs:configuration_delete", args=[saved.pk]), {"confirm": "yes"})
    assert deleted.status_code == 302
    assert not SavedConfiguration.objects.exists()


@pytest.mark.django_db
def test_another_users_configuration_is_replaced_or_deleted_only_with_the_delete_permission(
        operator_client, operator, django_user_model):
    """Anyone who could launch could delete (or, asked once, replace) everyone's configurations."""
    other = django_user_model.objects.create_user("other", password="other-pass-123")
    fields = demo_form(operator_client, "review")
    theirs = SavedConfiguration.objects.create(name="Theirs", spec={"agents": []}, created_by=other)
    assert reverse("runs:configuration_delete", args=[theirs.pk]).encode() not in operator_client.get(
        reverse("runs:configurations")).content
    refused = operator_client.post(reverse("runs:configuration_delete", args=[theirs.pk]), {"confirm": "yes"})
    assert refused.status_code == 403 and b"needs the runs.delete_savedconfiguration permission" in refused.content
    fields.update({"action": ["save"], "configuration.name": ["Theirs"], "configuration.replace": [str(theirs.pk)]})
    refused = operator_client.post(reverse("runs:new"), fields)
    assert refused.status_code == 400 and b"Save yours under another name." in refused.content
    assert SavedConfiguration.objects.get().spec == {"agents": []}

    operator.user_permissions.add(Permission.objects.get(codename="delete_savedconfiguration"))
    del fields["configuration.replace"]
    assert operator_client.post(reverse("runs:new"), fields).status_code == 409  # asks first, as for one's own
    deleted = operator_client.post(reverse("runs:configuration_delete", args=[theirs.pk]), {"confirm": "yes"})
    assert deleted.status_code == 302 and not SavedConfiguration.objects.exists()


# ---- htmx actions ------------------------------------------------------------------------------

@pytest.mark.django_db
def test_add_and_remove_profiles_and_fill_the_allowlist(operator_client):
    fields = form_fields(operator_client.get(reverse("runs:new")).content)
    fields["action"] = ["add-profile"]
    partial = operator_client.post(reverse("runs:new"), fields, HTTP_HX_REQUEST="true")
    assert partial.status_code == 200 and b"<html" not in partial.content
    fields = form_fields(partial.content)
    assert fields["agents.1.slug"] == ["agent-1"]

    fields.update({"action": ["fill-allowlist:1"], "agents.1.executionMode": ["responses_as_code"]})
    fields = form_fields(operator_client.post(reverse("runs:new"), fields, HTTP_HX_REQUEST="true").content)
    assert "files.read_file" in fields["agents.1.allowlist"][0].split()
    assert "read_file" not in fields["agents.1.allowlist"][0].split()

    fields["action"] = ["remove-profile:1"]
    fields = form_fields(operator_client.post(reverse("runs:new"), fields, HTTP_HX_REQUEST="true").content)
    assert "agents.1.slug" not in fields


# ---- interrupted -------------------------------------------------------------------------------

@pytest.mark.django_db
def test_sweep_marks_engine_runs_left_live_interrupted_and_keeps_their_events():
    from runs.ingest import writer as ingest

    running = Run.objects.create(name="running", source=Run.Source.ENGINE, status=Run.Status.RUNNING)
    ingest.append(running, [{"type": "session_started", "timestamp": "2026-01-01T00:00:00Z"}])
    queued = Run.objects.create(name="queued", source=Run.Source.ENGINE, status=Run.Status.QUEUED)
    pushed = Run.objects.create(name="pushed", source=Run.Source.API, status=Run.Status.RUNNING)
    done = Run.objects.create(name="done", source=Run.Source.ENGINE, status=Run.Status.COMPLETED)
    assert dispatch.sweep_interrupted() == 2
    statuses = dict(Run.objects.values_list("name", "status"))
    assert statuses == {"running": "interrupted", "queued": "interrupted", "pushed": "running", "done": "completed"}
    assert running.events.count() == 1 and queued.pk and pushed.pk and done.pk


@pytest.mark.django_db
def test_a_launch_is_leased_before_it_commits_so_a_sweep_in_between_spares_it(operator_client, local_redis):
    """Redis path: a server or worker starting between the run's commit and its dispatch must not
    mark it interrupted (here the commit's dispatch never comes: the test's transaction stays open)."""
    assert operator_client.post(reverse("runs:new"), demo_form(operator_client, "review")).status_code == 302
    run = Run.objects.get()
    try:
        assert dispatch.sweep_interrupted() == 0
        run.refresh_from_db()
        assert run.status == Run.Status.QUEUED
    finally:
        local_redis.delete(dispatch.LEASE_KEY.format(run.pk))


@pytest.mark.django_db
def test_the_launch_form_offers_the_typescript_arm(operator_client):
    fields = demo_form(operator_client, "arms")
    assert fields["agents.0.programLanguage"] == ["typescript"] and fields["agents.1.programLanguage"] == ["python"]
    page = operator_client.get(reverse("runs:new")).content.decode()
    assert 'value="typescript"' in page and 'value="python"' in page
