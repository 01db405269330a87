"""Where a queued run is executed.

Embedded default (no REDIS_URL): daemon threads in the server process, started on the first
dispatch, take run ids from an in-process queue and call `runs.engine.runner.start_run`.

With REDIS_URL: the run id goes on the channel layer's `gg-runs` channel; `manage.py runworker
gg-runs` processes (`RunWorkerConsumer`, routed in gg_console/asgi.py) execute it. Several
workers on any machine share the channel; each runs one run at a time.

A run left queued or running by a process that died is marked `interrupted` by
`sweep_interrupted`, called when the server or a worker starts. On the Redis path a process that
still owns a run holds a lease key for it (the dispatcher while the message waits on the channel,
the worker while it executes, refreshed by a heartbeat), so a sweep spares runs that are alive.
"""

import logging

from asgiref.sync import async_to_sync
from channels.consumer import SyncConsumer
from channels.layers import get_channel_layer
from django.conf import settings
from django.db import close_old_connections, connection

from runs.engine.runner import start_run
from runs.ingest import background
from runs.ingest.services import run_set_status
from runs.models import Run

log = logging.getLogger(__name__)

CHANNEL = "gg-runs"
THREADS = 2  # embedded default: runs executed at once by one server process
LEASE_KEY = "gg-console:run-lease:{}"
QUEUED_LEASE_SECONDS = 120  # outlives a message on the channel (channels-redis expires them at 60 s)
LIVE = (Run.Status.QUEUED, Run.Status.RUNNING)
PROCESS_SOURCES = (Run.Source.ENGINE, Run.Source.GG)


def reserve(run_pk: int) -> None:
    """Lease a queued run before its row commits (Redis path), so a server or worker starting in
    between does not sweep it as interrupted before `dispatch` hands it on."""
    if settings.REDIS_URL:
        background.redis_client().set(LEASE_KEY.format(run_pk), "queued", ex=QUEUED_LEASE_SECONDS)


def dispatch(run_pk: int) -> None:
    """Hand a queued, committed run to a worker."""
    if settings.REDIS_URL:
        reserve(run_pk)  # refreshed: the lease outlives the message on the channel
        async_to_sync(get_channel_layer().send)(CHANNEL, {"type": "run.start", "run": int(run_pk)})
    else:
        _threads.put(run_pk)


def execute(run_pk: int) -> None:
    """Run one queued run to its end; a failure outside the engine's own handling leaves a clear status."""
    try:
        run = Run.objects.filter(pk=run_pk).first()
        # The claim is one conditional UPDATE: of two workers handed the same run, one starts it.
        if run is None or run.cancel_requested or not run_set_status(run, Run.Status.RUNNING,
                                                                     only_from=(Run.Status.QUEUED,)):
            return  # deleted or canceled while queued, swept, or claimed by another worker: nothing to start
        with background.lease(LEASE_KEY.format(run_pk)):
            start_run(run)
    except Exception:
        log.exception("run %s stopped outside the engine's own error handling", run_pk)
        run_set_status(run_pk, Run.Status.INTERNAL_ERROR, only_from=LIVE)
    finally:
        connection.close()


INTERRUPTED_REASON = "the server or worker running it stopped before it ended"


def sweep_interrupted() -> int:
    """Mark launched runs (the built-in engine's and the gg binary's: every source that runs a
    process) no live process owns as `interrupted`; their events stay. Returns how many."""
    pks = list(Run.objects.filter(source__in=PROCESS_SOURCES, status__in=LIVE).values_list("pk", flat=True))
    pks = background.unleased(pks, LEASE_KEY)
    return sum(
        run_set_status(pk, Run.Status.INTERRUPTED, only_from=LIVE, end_reason=INTERRUPTED_REASON) for pk in pks
    )


def sweep_on_start() -> None:
    """The server's or worker's start: a database that cannot be reached yet is not fatal here."""
    try:
        swept = sweep_interrupted()
    except Exception as exc:  # noqa: BLE001 - e.g. before migrate, or a test process with the DB blocked
        log.warning("interrupted-run sweep skipped: %s", exc)
        return
    finally:
        close_old_connections()
    if swept:
        log.warning("%d run(s) left live by a stopped server or worker marked interrupted", swept)


class RunWorkerConsumer(SyncConsumer):
    """`manage.py runworker gg-runs`: executes the runs dispatched on the channel, one at a time."""

    def run_start(self, message):
        execute(message["run"])


_threads = background.ThreadPool(THREADS, "gg-runs", execute)
