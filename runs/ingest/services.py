"""Run writes outside the stream (the HackSoft split: views, commands, the launcher and the engine call
these; reads live in `runs.pages.run_selectors`). Records go through `runs.ingest.writer`.

* `run_create` / `run_get_or_create`: every run is created here, its name checked by `run_name_problem`
  (the launch form, the CLI, the import form and the API alike). A first write to a new name from
  several requests at once creates one run.
* `run_set_status`: every status change outside the stream (started, ended by the engine, canceled,
  swept as interrupted, marked ended, failed outside the engine) is saved here and rings the doorbell
  on commit. Statuses the stream names (`session_ended`) are the fold's, rung by the writer.
* Who may append to which run is `runs.access` (`run_write_problem`, `token_scope_problem`).
* `run_import_stream`, `run_mark_ended`: a file in, a run ended by hand. A run's deletion is
  `runs.ingest.deletion`.
"""

from __future__ import annotations

import unicodedata

from django.db import IntegrityError, transaction

from runs import access
from runs.feed import doorbell
from runs.ingest import writer
from runs.ingest.deletion import run_delete
from runs.models import Run

LIVE = (Run.Status.QUEUED, Run.Status.RUNNING)

RUN_NAME_MAX = Run._meta.get_field("name").max_length


class RunNameError(ValueError):
    pass


class RunNameTaken(RunNameError):
    pass


def run_name_problem(name) -> str:
    """Why `name` cannot name a run ('' when it can): empty, over 200 characters, holding a
    control character (NUL, a line break, ...) or a lone surrogate, or no name an address can
    reach (digits alone, a '/', '.' or '..'). Names are stripped first."""
    if not isinstance(name, str):
        return "A run name is text."
    name = name.strip()
    if not name:
        return "A run needs a name."
    if len(name) > RUN_NAME_MAX:
        return f"A run name has at most {RUN_NAME_MAX} characters (this one has {len(name):,})."
    if "\x00" in name:
        return "A run name cannot hold a NUL character."
    for ch in name:
        category = unicodedata.category(ch)
        if category == "Cc":
            return f"A run name cannot hold a control character (U+{ord(ch):04X})."
        if category == "Cs":
            return f"A run name cannot hold a lone surrogate (U+{ord(ch):04X})."
    # `<run>` in an address or a command is a run's id or its name (runs.access.run_resolve).
    if name.isascii() and name.isdigit():
        return (f"A run name cannot be digits alone: {name} is read as a run's id "
                f"(/api/runs/{name}/report, manage.py report {name}).")
    if "/" in name:
        return "A run name cannot hold '/': the API's addresses (/api/runs/<run>/…) take the name as one part."
    if name in (".", ".."):
        return f"A run name cannot be {name!r}: an address holding it is rewritten by browsers and clients."
    return ""


def _checked(name) -> str:
    problem = run_name_problem(name)
    if problem:
        raise RunNameError(problem)
    return name.strip()


def run_name_taken(name: str) -> str:
    """Why `name` is not free ('' when it is): a run holds it, or a run still being deleted does."""
    holder = Run.every.filter(name=name).values("deletion_requested_at").first()
    if holder is None:
        return ""
    if holder["deletion_requested_at"] is not None:
        return f"A run named {name!r} is being deleted; its name is free once it is gone."
    return f"A run named {name!r} already exists."


def unique_run_name(base: str) -> str:
    """`base`, or `base (2)`, `base (3)`... whichever is free."""
    base = (base or "run").strip()[: RUN_NAME_MAX - 20] or "run"
    if not Run.every.filter(name=base).exists():
        return base
    n = 2
    while Run.every.filter(name=f"{base} ({n})").exists():
        n += 1
    return f"{base} ({n})"


def run_create(*, name: str, source: str = Run.Source.IMPORT, created_by=None, **fields) -> Run:
    """A new run named `name` (`RunNameError` for a name the rule refuses, `RunNameTaken` for one in use)."""
    name = _checked(name)
    try:
        with transaction.atomic():  # a savepoint: a lost race leaves the caller's transaction usable
            return Run.objects.create(name=name, source=source, created_by=created_by, **fields)
    except IntegrityError:
        taken = run_name_taken(name)
        if taken:
            raise RunNameTaken(taken) from None
        raise


def run_get_or_create(*, name: str, source: str = Run.Source.IMPORT, created_by=None) -> tuple[Run, bool]:
    """The run named `name`, created when there is none; race-free (concurrent first writes to one
    name get the same run)."""
    name = _checked(name)
    run = Run.objects.filter(name=name).first()
    if run is not None:
        return run, False
    try:
        return run_create(name=name, source=source, created_by=created_by), True
    except RunNameTaken:
        run = Run.objects.filter(name=name).first()
        if run is None:  # the name's run is being deleted
            raise
        return run, False


def run_set_status(run, status: str, *, only_from=None, **fields) -> bool:
    """Set the status of `run` (a Run or its pk), with any other `fields` of its row, and ring the
    doorbell once committed. `only_from`: change it only while its status is one of these. Returns
    whether the run changed; a Run instance passed in is updated to match."""
    pk = run.pk if isinstance(run, Run) else run
    with transaction.atomic():
        rows = Run.objects.filter(pk=pk)
        if only_from is not None:
            rows = rows.filter(status__in=list(only_from))
        if not rows.update(status=status, **fields):
            return False
        last_seq = run.last_seq if isinstance(run, Run) else Run.objects.filter(pk=pk).values_list("last_seq", flat=True).get()
        doorbell.ring_on_commit(pk, last_seq, status)
    if isinstance(run, Run):
        run.status = status
        for key, value in fields.items():
            setattr(run, key, value)
    return True


class RunWriteRefused(PermissionError):
    pass


def run_import_stream(*, name: str, stream, source: str = Run.Source.IMPORT, created_by=None):
    """Import a file into the run called `name`, creating it if needed: (run, created, result).
    A new run that stored nothing (a PNG, an empty file: every line rejected or none at all) is
    not kept — run is None then, and the result still says what was rejected. `RunWriteRefused`
    when `created_by` may not write into the existing run of that name (`access.run_write_problem`)."""
    run, created = run_get_or_create(name=name, source=source, created_by=created_by)
    problem = "" if created else access.run_write_problem(run, created_by)
    if problem:
        raise RunWriteRefused(problem)
    result = writer.append_stream(run, stream)
    if created and not result.stored:
        run_delete(run)
        return None, False, result
    return run, created, result


def run_mark_ended(run: Run, *, by: str = "") -> bool:
    """End a live run nothing will end by itself (an imported or pushed stream that never sent
    `session_ended`): it reads `interrupted`, with who marked it. False when it already ended."""
    reason = f"marked ended by {by}" if by else "marked ended by an operator"
    return run_set_status(run, Run.Status.INTERRUPTED, only_from=LIVE, end_reason=reason)
