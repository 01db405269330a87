"""manage.py rebuild_projections RUN|--all|--stale — fold the stored log again from seq 1."""

from django.core.management.base import BaseCommand, CommandError

from runs.access import run_resolve
from runs.ingest.rebuild import rebuild_projections, stale_runs
from runs.ingest.writer import RunGone
from runs.models import Run


class Command(BaseCommand):
    help = (
        "Throw away a run's projections (agents, holdings, stores, rolled-up figures) and fold its stored "
        "event log again with the same fold the write path uses."
    )

    def add_arguments(self, parser):
        parser.add_argument("run", nargs="?", help="Run id or name.")
        parser.add_argument("--all", action="store_true", help="Rebuild every run.")
        parser.add_argument("--stale", action="store_true",
                            help="Rebuild the runs an older fold made (stored before a projection was added).")

    def handle(self, *args, run=None, all=False, stale=False, **options):
        if all:
            runs = list(Run.objects.order_by("pk"))
        elif stale:
            runs = stale_runs()
            if runs:  # silent when there are none: bootstrap asks at every start
                self.stdout.write(f"Runs folded by an older console: rebuilding {len(runs)}.")
        elif run:
            target = run_resolve(run)
            if target is None:
                raise CommandError(f"No run {run!r}.")
            runs = [target]
        else:
            raise CommandError("Name a run (id or name), or pass --all or --stale.")
        for target in runs:
            try:
                stats = rebuild_projections(target)
            except RunGone:
                self.stdout.write(f"{target.name}: deleted meanwhile, skipped")
                continue
            target.refresh_from_db()
            self.stdout.write(
                f"{target.name}: rebuilt from {stats['events']} events "
                f"({target.agent_count} agents, {target.turn_count} turns, {target.call_count} calls; "
                f"{stats['columns_fixed']} event columns corrected)"
            )
