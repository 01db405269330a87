"""A run's end: `run_delete` takes everything stored for it; `run_delete_later` is an operator's
Delete. The run is gone to every page, feed, search and write once the request commits
(`Run.objects` no longer shows it, open feeds hear it from the doorbell, a live engine run is told to
stop), and its records go in a background thread of the server: a million of them take ~45 s on
SQLite, longer than a browser should wait. The runs list says what is still being deleted
(`runs.across.run_list.deletions_pending`). A deletion that fails is tried again while the process
lives (`RETRY_SECONDS`), the list saying why it stopped; one a stopped server cut short is finished by
the next server or worker that starts (`resume_on_start`).
"""

import logging
import shutil
import threading
import time

from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from runs.feed import checkpoints, doorbell, search
from runs.ingest import background
from runs.models import Agent, Event, Holding, ModuleStore, RejectedLine, Run

log = logging.getLogger(__name__)

DELETE_BATCH = 20_000  # records a transaction at most (`run_delete`)
# A transaction's records start at FIRST_BATCH and double while one takes under BATCH_SECONDS (halving when
# over): records are up to a MiB each, and 20,000 of those held the write lock for minutes.
FIRST_BATCH, BATCH_SECONDS = 500, 1.0
LEASE_KEY = "gg-console:deletion-lease:{}"
# A failed deletion's next tries (a database locked or out of reach a while), the last one's wait repeated.
RETRY_SECONDS = (5, 30, 120, 600)


def run_delete(run: Run, *, batch: int = DELETE_BATCH) -> dict:
    """Delete a run and everything stored for it: events, rejected lines, projections, its rows of the
    search index and, once those are gone, its workspace directory (a launched run's). Bulk deletes
    (no event is loaded); open feeds of the run hear it from the doorbell. Returns what went:
    ``{"events": n, "agents": m, ...}``.

    A long log goes first, a batch of records a transaction from its end (up to `batch`, sized by how
    long the last one took), so that other writers wait a batch at a time rather than the whole
    deletion (SQLite has one write lock and a 30 s busy timeout: a million records in one transaction
    held it 38 s). The rest goes in one transaction. Cut short, it leaves a shorter log; running it
    again finishes it."""
    pk = run.pk
    events = 0
    size = min(FIRST_BATCH, batch)
    top = Run.every.filter(pk=pk).values_list("last_seq", flat=True).first() or 0
    while top > size:
        top -= size
        started = time.monotonic()
        with transaction.atomic():
            search.forget(pk, after=top)
            events += Event.objects.filter(run_id=pk, seq__gt=top).delete()[0]
        size = max(1, size // 2) if time.monotonic() - started > BATCH_SECONDS else min(batch, size * 2)
    with transaction.atomic():
        search.forget(pk)
        checkpoints.forget(pk)
        gone = {
            "events": events + Event.objects.filter(run_id=pk).delete()[0],
            "rejected_lines": RejectedLine.objects.filter(run_id=pk).delete()[0],
            "holdings": Holding.objects.filter(agent__run_id=pk).delete()[0],
        }
        Agent.objects.filter(run_id=pk).update(parent=None, predecessor=None)
        gone["agents"] = Agent.objects.filter(run_id=pk).delete()[0]
        gone["stores"] = ModuleStore.objects.filter(run_id=pk).delete()[0]
        Run.every.filter(pk=pk).delete()
        doorbell.ring_on_commit(pk, run.last_seq, "deleted")
    shutil.rmtree(run.workspace_dir, ignore_errors=True)  # (rmtree removes a symlink, never follows it)
    return gone


def run_delete_later(*runs: Run) -> list[Run]:
    """Delete `runs` in the background (see the module's docstring): those whose deletion this asked
    for (not asked already, not gone). One transaction: every one is gone before the first goes."""
    asked = []
    with transaction.atomic():
        for run in runs:
            # cancel_requested: a live engine run stops at its next turn boundary (its writes are refused already).
            if Run.objects.filter(pk=run.pk).update(deletion_requested_at=timezone.now(), cancel_requested=True):
                doorbell.ring_on_commit(run.pk, run.last_seq, "deleted")
                transaction.on_commit(lambda pk=run.pk: _threads.put((pk, 0)))
                asked.append(run)
    return asked


def _delete(item: tuple[int, int]) -> None:
    pk, tries = item
    try:
        # Leased: a server or worker starting meanwhile leaves this deletion to this process.
        with background.lease(LEASE_KEY.format(pk)):
            run = Run.every.filter(pk=pk).first()
            if run is not None:
                run_delete(run)
    except Exception as exc:
        # What went stays gone (a batch a transaction); the rest is tried again until it goes.
        wait = RETRY_SECONDS[min(tries, len(RETRY_SECONDS) - 1)]
        log.exception("deleting run %s stopped; trying again in %s s", pk, wait)
        _say_stopped(pk, f"{type(exc).__name__}: {exc}")
        again = threading.Timer(wait, _threads.put, [(pk, tries + 1)])
        again.daemon = True
        again.start()
    finally:
        connection.close()


def _say_stopped(pk: int, why: str) -> None:
    """Keep why the run's deletion stopped, for the runs list (not when the database refuses that too:
    the log has it)."""
    try:
        Run.every.filter(pk=pk).update(deletion_stopped=why[:300])
    except Exception:  # noqa: BLE001 - the failure that stopped the deletion, most likely
        log.warning("could not note why deleting run %s stopped", pk)


def resume_on_start() -> None:
    """The server's or worker's start: finish the deletions no live process holds (a database that
    cannot be reached yet is not fatal here)."""
    try:
        pks = list(Run.every.filter(deletion_requested_at__isnull=False).values_list("pk", flat=True))
        pks = background.unleased(pks, LEASE_KEY)
    except Exception as exc:  # noqa: BLE001 - e.g. before migrate, or a test process with the DB blocked
        log.warning("resuming run deletions skipped: %s", exc)
        return
    finally:
        close_old_connections()
    for pk in pks:
        _threads.put((pk, 0))
    if pks:
        log.warning("resumed %d run deletion(s) a stopped server or worker left unfinished", len(pks))


_threads = background.ThreadPool(1, "gg-deletions", _delete)
