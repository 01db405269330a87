"""`manage.py refresh_facts [--all]`: fold the runs list's per-run facts (RunFacts) of every run whose
facts are missing or behind its log — runs stored before the table existed — or of every run."""

from django.core.management.base import BaseCommand

from runs.ingest import facts
from runs.models import Run


class Command(BaseCommand):
    help = "Fold the runs list's facts of the runs whose facts are missing or behind (or of all runs)."

    def add_arguments(self, parser):
        parser.add_argument("--all", action="store_true", help="refresh every run, not only those behind")

    def handle(self, *args, all=False, **options):
        if all:
            count = 0
            for run in Run.objects.order_by("id").iterator():
                facts.refresh(run)
                count += 1
        else:
            count = facts.catch_up()
        self.stdout.write(f"refreshed the facts of {count} run(s)")
