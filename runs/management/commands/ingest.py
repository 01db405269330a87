"""manage.py ingest PATH|- [--run NAME] — store a gg NDJSON stream through the one write path."""

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from runs.ingest import services
from runs.models import Run


class Command(BaseCommand):
    help = (
        "Store a gg NDJSON stream (gg's stdout, or a host's events.jsonl) in a run and fold it into the "
        "run's projections. Prints 'stored N, rejected M'. Importing the same stream into the same run "
        "again stores nothing twice."
    )

    def add_arguments(self, parser):
        parser.add_argument("path", help="An NDJSON file, or - for standard input.")
        parser.add_argument(
            "--run", dest="run", help="Run name (default: the file's name; 'stdin' for -). "
            "An existing run of that name is appended to."
        )

    def handle(self, *args, path, run=None, **options):
        if path == "-":
            name = run or "stdin"
            stream = sys.stdin.buffer
            close = False
        else:
            p = Path(path)
            if not p.is_file():
                raise CommandError(f"No such file: {path}")
            name = run or p.stem
            try:
                stream = p.open("rb")
            except OSError as exc:
                raise CommandError(f"Cannot read {path}: {exc.strerror}") from exc
            close = True
        try:
            # The upload form's service: a new run that stored nothing (a PNG, an empty file) is not kept.
            target, created, result = services.run_import_stream(name=name, stream=stream, source=Run.Source.IMPORT)
        except (ValueError, services.RunWriteRefused) as exc:
            raise CommandError(str(exc)) from exc
        finally:
            if close:
                stream.close()
        for number, reason in result.rejections:
            self.stderr.write(f"line {number}: {reason}")
        if target is None:
            self.stderr.write(f"no run created: nothing in {path} was stored")
        else:
            verb = "created" if created else "appended to"
            self.stderr.write(f"run {target.name!r} (id {target.pk}) {verb}; last seq {result.last_seq}")
        self.stdout.write(result.summary())
