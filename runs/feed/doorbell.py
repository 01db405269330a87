"""The doorbell: after a commit that appended events (or changed a run's status), tell the
channel layer group of that run that there is something new to read.

It is a doorbell, not a log: the message carries the last committed seq (and the run status when
it changed), never the events themselves. Consumers read `Event` rows after their own cursor.

Message: ``{"type": "run.event", "seq": <last seq>}``, plus ``"status": <run status>`` when the
append changed the run's status (a status change outside an append rings the same way with the
current last seq). One message type only, so a consumer needs one handler (``run_event``).
"""

import asyncio
import logging

from asgiref.sync import async_to_sync
from channels.layers import InMemoryChannelLayer, get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

MESSAGE_TYPE = "run.event"

# The event loop this process's sockets were accepted on (`listen_on`): a doorbell rung from any
# thread is handed to it, and the writer goes on. Waiting for it to be sent (async_to_sync) held a
# POST's reply, hence the pusher's next records, for as long as the busy loop took to get to it;
# and from a thread of no loop (a launched run's, in the server) async_to_sync built a loop of its
# own per doorbell, on which the in-memory layer woke the sockets' waiters without waking theirs.
_loop = None
_pending = set()  # sends under way (a task the loop holds only weakly would be collected)


def group_name(run_pk) -> str:
    """The channel layer group every live view of run `run_pk` joins."""
    return f"run-{int(run_pk)}"


def message(seq, status=None) -> dict:
    msg = {"type": MESSAGE_TYPE, "seq": int(seq)}
    if status is not None:
        msg["status"] = status
    return msg


def listen_on(loop) -> None:
    """Sockets of this process are served by `loop` (each feed socket says so as it connects)."""
    global _loop
    _loop = loop


def ring(run_pk, seq, status=None) -> None:
    """Ring now: handed to the sockets' loop when this process has one running (the writer does not
    wait), else sent before returning. Never raises: a missing or broken channel layer must not
    fail a write."""
    try:
        layer = get_channel_layer()
        if layer is None or _nobody_listens(layer, run_pk):
            return
        loop = _loop
        if loop is None or not loop.is_running():
            async_to_sync(layer.group_send)(group_name(run_pk), message(seq, status))
            return
        future = asyncio.run_coroutine_threadsafe(layer.group_send(group_name(run_pk), message(seq, status)), loop)
        _pending.add(future)
        future.add_done_callback(lambda f: _rang(f, run_pk, seq))
    except Exception:  # noqa: BLE001 - the write already committed; the doorbell is best-effort
        log.warning("doorbell for run %s (seq %s) could not ring", run_pk, seq, exc_info=True)


def _nobody_listens(layer, run_pk) -> bool:
    """The in-memory layer delivers inside this process only: with no socket of this process on the
    run, a ring reaches no one (and from a process with no loop, as `manage.py ingest` or a bench,
    async_to_sync built and tore down a loop for it, 0.35 ms a ring)."""
    return isinstance(layer, InMemoryChannelLayer) and not layer.groups.get(group_name(run_pk))


def _rang(future, run_pk, seq):
    _pending.discard(future)
    if not future.cancelled() and future.exception() is not None:
        log.warning("doorbell for run %s (seq %s) could not ring", run_pk, seq, exc_info=future.exception())


def ring_on_commit(run_pk, seq, status=None, *, using=None) -> None:
    """Ring once the current transaction commits (immediately when there is none)."""
    transaction.on_commit(lambda: ring(run_pk, seq, status), using=using)
