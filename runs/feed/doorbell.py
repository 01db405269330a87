"""The doorbell: after a commit that appended events (or changed a run's status), tell the
channel layer group of that run that there is something new to read.

It is a doorbell, not a log: the message carries the last committed seq (and the run status when
it changed), never the events themselves. Consumers read `Event` rows after their own cursor.

Message: ``{"type": "run.event", "seq": <last seq>}``, plus ``"status": <run status>`` when the
append changed the run's status (a status change outside an append rings the same way with the
current last seq). One message type only, so a consumer needs one handler (``run_event``).
"""

import logging

from asgiref.sync import async_to_sync
from channels.layers import get_channel_layer
from django.db import transaction

log = logging.getLogger(__name__)

MESSAGE_TYPE = "run.event"


def group_name(run_pk) -> str:
    """The channel layer group every live view of run `run_pk` joins."""
    return f"run-{int(run_pk)}"


def message(seq, status=None) -> dict:
    msg = {"type": MESSAGE_TYPE, "seq": int(seq)}
    if status is not None:
        msg["status"] = status
    return msg


def ring(run_pk, seq, status=None) -> None:
    """Ring now. Never raises: a missing or broken channel layer must not fail a write."""
    try:
        layer = get_channel_layer()
        if layer is None:
            return
        async_to_sync(layer.group_send)(group_name(run_pk), message(seq, status))
    except Exception:  # noqa: BLE001 - the write already committed; the doorbell is best-effort
        log.warning("doorbell for run %s (seq %s) could not ring", run_pk, seq, exc_info=True)


def ring_on_commit(run_pk, seq, status=None, *, using=None) -> None:
    """Ring once the current transaction commits (immediately when there is none)."""
    transaction.on_commit(lambda: ring(run_pk, seq, status), using=using)
