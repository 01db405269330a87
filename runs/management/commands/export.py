"""manage.py export RUN [-o FILE] — write a run's stored stream back out, exactly as received."""

from django.core.management.base import BaseCommand, CommandError

from runs.access import run_resolve
from runs.ingest.stored import run_raw_lines


class Command(BaseCommand):
    help = "Write the stored stream of RUN (id or name) as NDJSON: one stored record per line, in seq order, exactly as received."

    def add_arguments(self, parser):
        parser.add_argument("run", help="Run id or name.")
        parser.add_argument("-o", "--output", help="Write to this file instead of standard output.")

    def handle(self, *args, run, output=None, **options):
        target = run_resolve(run)
        if target is None:
            raise CommandError(f"No run {run!r}.")
        lines = run_raw_lines(target, upto=target.last_seq)
        if output:
            with open(output, "wb") as fh:
                n = _write(fh, lines)
            self.stderr.write(f"wrote {n} records to {output}")
            return
        # The stored text is UTF-8 whatever the terminal's encoding: write bytes, not text.
        out = getattr(self.stdout._out, "buffer", None)
        if out is None:  # a text-only stream (call_command(stdout=StringIO()))
            for _seq, raw in lines:
                self.stdout.write(raw, ending="\n")
            return
        self.stdout.flush()
        _write(out, lines)
        out.flush()


def _write(fh, lines) -> int:
    n = 0
    for _seq, raw in lines:
        fh.write(raw.encode("utf-8") + b"\n")
        n += 1
    return n
