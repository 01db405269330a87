"""`start_run(run)`: execute one queued run to its end (the worker thread and `runworker` call it).

It validates the run's `launch_spec`, sets `Run.status` to running, drives the built-in engine (or
the external gg binary for `"engine": "gg"`) and sets the terminal status. `Run.cancel_requested`
is re-read from the database at every turn boundary. Records reach the database through
`runs.ingest.writer.append` as they are emitted, so a failure loses nothing already recorded; the run is
still closed with `internal_error`.
"""

import logging
import shutil
import uuid

from django.utils import timezone

from runs.engine.external import run_external
from runs.ingest.services import run_set_status
from runs.ingest.writer import RunGone
from runs.models import Run
from runs.engine.loop import Engine
from runs.engine.validation import validate_spec
from runs.engine.telemetry import Telemetry

log = logging.getLogger(__name__)


def cancel_requested(run):
    # Run.every: a run being deleted is hidden from Run.objects, and its deletion asks it to stop too.
    return Run.every.filter(pk=run.pk, cancel_requested=True).exists()


def start_run(run, *, provider=None, workspace=None):
    """Run `run` to the end; returns gg's terminal status word. `workspace` overrides the run's
    directory under var/workspaces."""
    spec, errors = validate_spec(run.launch_spec)
    session_id = run.session_id or f"run-{run.pk}-{uuid.uuid4().hex[:8]}"
    fields = {"session_id": session_id, "started_at": timezone.now()}
    if spec is not None:
        fields["capability_set"] = spec.capability_set()
        if spec.engine == "gg":
            fields["source"] = Run.Source.GG
    run_set_status(run, Run.Status.RUNNING, **fields)
    telemetry = Telemetry(run, session_id)
    if spec is None:
        # A spec that no longer validates never launches: gg's `error` status, with the reasons.
        for error in errors:
            telemetry.emit("log", level="error", message=f"launch refused: {error['path']}: {error['message']}")
        telemetry.emit("session_ended", status="error")
        telemetry.flush()
        run_set_status(run, Run.Status.ERROR)
        return Run.Status.ERROR
    workspace = workspace or run.workspace_dir
    try:
        if spec.engine == "gg":
            status = run_external(run, spec, session_id, workspace, lambda: cancel_requested(run))
        else:
            engine = Engine(spec, telemetry, workspace, lambda: cancel_requested(run), provider=provider)
            status = engine.run()
    except RunGone:
        log.info("run %s stopped: deleted while it ran", run.pk)
        # Its deletion may have emptied the workspace before this turn's last tool wrote into it.
        shutil.rmtree(run.workspace_dir, ignore_errors=True)
        return Run.Status.CANCELED
    except Exception:
        log.exception("run %s failed outside the engine's own handling", run.pk)
        telemetry.flush()
        status = Run.Status.INTERNAL_ERROR
    run_set_status(run, status)
    return status
