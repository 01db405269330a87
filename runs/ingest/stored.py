"""The stored stream, out: a run's records exactly as received, in seq order and in bounded chunks
(the export, the NDJSON API, the selection's zip)."""

from __future__ import annotations

from runs.models import Event, Run


def run_raw_lines(run: Run, *, after: int = 0, upto: int | None = None, chunk: int = 2000):
    """Yield ``(seq, raw)`` for the run's stored records after `after` (up to `upto`), in seq order,
    reading `chunk` rows per query so memory stays bounded on any size of run."""
    cursor = max(int(after), 0)
    while True:
        rows = raw_lines_chunk(run.pk, cursor, upto, chunk)
        if not rows:
            return
        yield from rows
        cursor = rows[-1][0]
        if len(rows) < chunk:
            return


def raw_lines_chunk(run_pk: int, after: int, upto: int | None, chunk: int) -> list:
    """``[(seq, raw)]``: at most `chunk` stored records of a run after seq `after` (to `upto`)."""
    qs = Event.objects.filter(run_id=run_pk, seq__gt=after)
    if upto is not None:
        qs = qs.filter(seq__lte=upto)
    return list(qs.order_by("seq").values_list("seq", "raw")[:chunk])
