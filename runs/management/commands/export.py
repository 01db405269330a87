"""manage.py export RUN [-o FILE] — write a run's stored stream back out, exactly as received."""

from django.core.management.base import BaseCommand, CommandError

from runs import selectors


class Command(BaseCommand):
    help = "Write the stored stream of RUN (id or name) as NDJSON: one stored record per line, in seq order, exactly as received."

    def add_arguments(self, parser):
        parser.add_argument("run", help="Run id or name.")
        parser.add_argument("-o", "--output", help="Write to this file instead of standard output.")

    def handle(self, *args, run, output=None, **options):
        target = selectors.run_resolve(run)
        if target is None:
            raise CommandError(f"No run {run!r}.")
        lines = selectors.run_raw_lines(target, upto=target.last_seq)
        if output:
            n = 0
            with open(output, "wb") as fh:
                for _seq, raw in lines:
                    fh.write(raw.encode("utf-8") + b"\n")
                    n += 1
            self.stderr.write(f"wrote {n} records to {output}")
            return
        for _seq, raw in lines:
            self.stdout.write(raw, ending="\n")
