"""Writes behind the launch forms: launch, cancel, saved configurations."""

import secrets
import shutil

from django.db import transaction
from django.utils import timezone

from runs.ingest.services import (RunNameError, RunNameTaken, run_create, run_name_problem, run_name_taken,
                                  run_set_status)
from runs.access import may_remove_saved, replacement_refused
from runs.launch import dispatch
from runs.engine import run_workspace as workspace
from runs.launch.forms import LaunchForm
from runs.launch.starter import script_refusal
from runs.models import Run, SavedConfiguration


def launch_problems(form: LaunchForm, upload=None) -> list:
    """What would refuse the launch beyond the spec's own rules (`form.validate` takes them): the run
    name (the one name rule of every run, and free), a script the root agent has no reply in (the
    dry run's reading), and the workspace zip, when one is uploaded."""
    problems = []
    # A provider input that did not parse (a script's JSON, an unknown kind) is its own error already.
    if not any(e["path"].startswith("provider") for e in form.errors) and (refusal := script_refusal(form.spec)):
        problems.append({"path": refusal[0], "message": refusal[1]})
    name = form.spec.get("name") or ""
    name = name if isinstance(name, str) else ""  # a non-string name: the spec's own validation says so
    problem = name and run_name_problem(name)
    if problem:
        problems.append({"path": "name", "message": problem})
    elif name and (taken := run_name_taken(name.strip())):
        problems.append({"path": "name", "message": taken})
    if upload is not None:
        try:
            workspace.check_zip(upload)
        except workspace.WorkspaceError as exc:
            problems.append({"path": "workspace", "message": str(exc)})
    return problems


def run_launch(*, form: LaunchForm, upload=None, user=None):
    """Validate the form (spec, run name, workspace zip: every problem at once) and create the run
    queued, its workspace ready, dispatched once committed. Returns the Run, or None with the
    errors on `form`."""
    name = form.spec.get("name") or ""
    run_spec = form.validate(launch_problems(form, upload))
    if run_spec is None:
        return None
    try:
        with transaction.atomic():
            run = _create_queued(name, run_spec, form.spec, user)
            dest = run.workspace_dir
            shutil.rmtree(dest, ignore_errors=True)  # a deleted run's leftovers under a reused id
            if upload is not None:
                workspace.unpack(upload, dest)
            else:
                workspace.create_empty(dest)
            dispatch.reserve(run.pk)
            transaction.on_commit(lambda: dispatch.dispatch(run.pk))
    except workspace.WorkspaceError as exc:  # what only inflating the members could tell
        form.add_error("workspace", str(exc))
        return None
    except RunNameError as exc:  # the name was taken meanwhile
        form.add_error("name", str(exc))
        return None
    return run


def _create_queued(name, run_spec, spec, user):
    """The queued run under the operator's name, or under a made-up one: a made-up name taken
    meanwhile (launches in the same second, as twenty at once from a script) is made up again
    rather than refused, since the operator never chose it."""
    for attempt in range(5):
        try:
            return run_create(
                name=name or _fresh_name(run_spec.root.slug), source=Run.Source.ENGINE, status=Run.Status.QUEUED,
                created_by=user, launch_spec=spec, capability_set=run_spec.capability_set(),
            )
        except RunNameTaken:
            if name or attempt == 4:
                raise


def run_cancel(run):
    """A queued run is canceled on the spot; a running one stops at its next turn boundary (the
    engine reads `cancel_requested`), keeping everything recorded. Returns False for an ended run."""
    if run_set_status(run, Run.Status.CANCELED, only_from=(Run.Status.QUEUED,), cancel_requested=True):
        return True
    return bool(Run.objects.filter(pk=run.pk, status=Run.Status.RUNNING).update(cancel_requested=True))


def configuration_save(*, form: LaunchForm, name, description="", user):
    """Save (or replace, under the same name) a valid configuration. Returns (configuration, created)
    or None with the errors on `form`."""
    extra = [] if name.strip() else [{"path": "configuration.name", "message": "a configuration needs a name"}]
    holder = SavedConfiguration.objects.filter(name=name.strip()).select_related("created_by").first()
    if refusal := replacement_refused(user, holder):
        extra.append({"path": "configuration.name", "message": refusal})
    if form.validate(extra) is None:
        return None
    spec = {k: v for k, v in form.spec.items() if k != "name"}  # run names are unique; a configuration is reused
    return SavedConfiguration.objects.update_or_create(
        name=name.strip(), defaults={"description": description.strip(), "spec": spec, "created_by": user}
    )


def configuration_overwrite(configuration, user):
    """The saved configuration a save under this name would replace and that the operator has not
    agreed to replace, or None. Saving over the one they loaded, their own, needs no asking."""
    existing = SavedConfiguration.objects.filter(name=configuration.get("name", "").strip()).first()
    if existing is None or configuration.get("replace") == str(existing.pk) or not may_remove_saved(user, existing):
        return None  # agreed, or not theirs to replace: configuration_save says so
    if configuration.get("loaded") == str(existing.pk) and existing.created_by_id == getattr(user, "pk", None):
        return None
    return existing


def configuration_delete(configuration):
    configuration.delete()


def _fresh_name(root_slug):
    return f"{root_slug}-{timezone.now():%Y%m%d-%H%M%S}-{secrets.token_hex(2)}"
