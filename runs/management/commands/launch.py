"""`manage.py launch SPEC.json [--name NAME] [--wait]`: start a run on the built-in engine from a
run-spec file (the JSON the launch form builds; runs/demo/*.spec.json are ready-made)."""

import json
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from runs.ingest import services
from runs.engine.runner import start_run
from runs.engine.validation import validate_spec
from runs.launch import dispatch
from runs.launch.starter import script_refusal
from runs.engine import run_workspace as workspace
from runs.models import Run


def launch_spec_file(path, name=None):
    """Validate the spec file and create its run, queued, with an empty workspace. CommandError
    listing every problem when the spec is refused."""
    try:
        data = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CommandError(f"{path}: {exc}") from None
    spec, errors = validate_spec(data)
    if spec is None:
        raise CommandError("the spec was refused:\n" + "\n".join(f"  {e['path'] or '(spec)'}: {e['message']}"
                                                                   for e in errors))
    if refusal := script_refusal(data):  # the launch form's rule: a run that would fail at its first turn
        raise CommandError(f"the spec was refused:\n  {refusal[0]}: {refusal[1]}")
    base = name or data.get("name") or Path(path).name.removesuffix(".spec.json").removesuffix(".json")
    try:
        with transaction.atomic():
            run = services.run_create(name=services.unique_run_name(base), source=Run.Source.ENGINE,
                                      status=Run.Status.QUEUED, launch_spec=data,
                                      capability_set=spec.capability_set())
            dispatch.reserve(run.pk)  # a sweep starting now spares it
    except services.RunNameError as exc:  # a name the one rule refuses: digits alone, a '/', ...
        raise CommandError(f"the run name {base!r}: {exc}") from None
    workspace.create_empty(run.workspace_dir)
    return run


class Command(BaseCommand):
    help = "Launch a run on the built-in engine from a run-spec JSON file."

    def add_arguments(self, parser):
        parser.add_argument("spec", help="a run-spec JSON file, e.g. runs/demo/review.spec.json")
        parser.add_argument("--name", help="the run's name (default: the spec's name, else the file's)")
        parser.add_argument("--wait", action="store_true", help="run it here and print the final status")

    def handle(self, *args, spec, name=None, wait=False, **options):
        run = launch_spec_file(spec, name)
        self.stdout.write(f"launched run {run.name!r} (id {run.pk})")
        if wait or not settings.REDIS_URL:
            # Without a worker channel this process is the worker: a thread would die with it.
            status = start_run(run)
            if wait:
                self.stdout.write(status)
        else:
            dispatch.dispatch(run.pk)
