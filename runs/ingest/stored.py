"""The stored stream, out: a run's records exactly as received, in seq order and in bounded chunks
(the export, the NDJSON API, the selection's zip), and a response body that sends them as they are
read, under Daphne too."""

from __future__ import annotations

import zipfile

from asgiref.sync import sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.utils.text import slugify

from runs.models import Event, Run


def run_raw_chunks(run: Run, *, after: int = 0, upto: int | None = None, chunk: int = 2000):
    """Yield the run's stored records after `after` (up to `upto`) in seq order as lists of at most
    `chunk` ``(seq, raw)`` rows, one query each, so memory stays bounded on any size of run."""
    cursor = max(int(after), 0)
    while rows := raw_lines_chunk(run.pk, cursor, upto, chunk):
        yield rows
        if len(rows) < chunk:
            return
        cursor = rows[-1][0]


def run_raw_lines(run: Run, **kwargs):
    """Yield ``(seq, raw)`` for the run's stored records (`run_raw_chunks`' rows one by one)."""
    for rows in run_raw_chunks(run, **kwargs):
        yield from rows


def raw_lines_chunk(run_pk: int, after: int, upto: int | None, chunk: int) -> list:
    """``[(seq, raw)]``: at most `chunk` stored records of a run after seq `after` (to `upto`)."""
    qs = Event.objects.filter(run_id=run_pk, seq__gt=after)
    if upto is not None:
        qs = qs.filter(seq__lte=upto)
    return list(qs.order_by("seq").values_list("seq", "raw")[:chunk])


def file_stem(run: Run) -> str:
    """The run's name as a file's name (its download, its member of a zip)."""
    return slugify(run.name) or f"run-{run.pk}"


def ndjson_chunks(run: Run, **kwargs):
    """The run's stored lines as NDJSON, a chunk of lines at a time."""
    for rows in run_raw_chunks(run, **kwargs):
        yield b"".join(raw.encode("utf-8") + b"\n" for _seq, raw in rows)


class _Spout:
    """Where zipfile writes the archive: the bytes written since the last `take`. It cannot seek,
    so zipfile writes each member's sizes after its data (the archive needs no second pass)."""

    def __init__(self):
        self.parts = []

    def write(self, data) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self):
        pass

    def take(self) -> bytes:
        out = b"".join(self.parts)
        self.parts.clear()
        return out


def zip_chunks(runs: list[Run]):
    """A zip of the runs' streams (`<run name>.ndjson` each), yielded as it is compressed: the first
    bytes leave at once, and neither memory nor disk holds the archive."""
    spout = _Spout()
    names = set()
    with zipfile.ZipFile(spout, "w", zipfile.ZIP_DEFLATED) as archive:
        for run in runs:
            name = file_stem(run)
            if name in names:
                name = f"{name}-{run.pk}"
            names.add(name)
            # Zip64 from the start: a member's size is unknown until it is written, and a run's
            # stream past 2 GiB would otherwise fail the archive halfway through sending it.
            with archive.open(f"{name}.ndjson", "w", force_zip64=True) as member:
                for chunk in ndjson_chunks(run, upto=run.last_seq):
                    member.write(chunk)
                    if part := spout.take():
                        yield part
    yield spout.take()  # the last member's end and the central directory


def response_body(chunks, request):
    """`chunks` (a generator of bytes that reads the database as it goes) as a streaming response's
    body. Under ASGI (Daphne) Django drains a synchronous iterator into a list before sending any
    of it, so there each chunk is taken on a thread as the client reads."""
    if not isinstance(request, ASGIRequest):
        return chunks
    return _each_on_a_thread(chunks)


async def _each_on_a_thread(chunks):
    step = sync_to_async(next)
    try:
        while (part := await step(chunks, None)) is not None:
            yield part
    finally:
        # A client that went away: the generator's cleanup (its cursor, its read transaction) runs now,
        # not at collection, and on the thread its `next` runs on, once that returns (closed from here
        # mid-chunk it was "generator already executing", a traceback per download cut short).
        await sync_to_async(chunks.close)()
