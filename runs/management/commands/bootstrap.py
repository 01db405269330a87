"""Setup at every `scripts/serve`: an admin account (password printed once), the demo runs on the first
start, and runs an older console folded rebuilt."""

import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

from runs.ingest import services, writer
from runs.engine.runner import start_run
from runs.demo import DEMO_DIR
from runs.management.commands.launch import launch_spec_file
from runs.models import Run

DEMO_STREAMS = [
    # (run name, path): the real recorded gg stream, imported.
    ("real-mock-session", settings.BASE_DIR.parent / "shared" / "fixtures" / "gg" / "real-mock-session.ndjson"),
]
# Launched on the built-in engine from the shipped demo specs and run to the end here.
DEMO_SPECS = ["delegation", "review", "code-root", "board", "arms", "gate"]


class Command(BaseCommand):
    help = "Create the admin account if there is none (printing its password once) and the demo run."

    def handle(self, *args, **options):
        User = get_user_model()
        if not User.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser("admin", "", password)
            self.stdout.write(self.style.SUCCESS(f"Admin account: admin / {password}  (shown once)"))
        else:
            self.stdout.write("Admin account: skipped, one exists (its password was shown when it was created; "
                              "`manage.py changepassword admin` sets a new one).")
        if Run.every.exists():  # runs being deleted too: they may hold the demos' names
            self.stdout.write("Demo runs: skipped, the database already holds runs.")
            # Runs stored before this console's latest projection are folded again, once.
            call_command("rebuild_projections", stale=True, stdout=self.stdout)
        else:
            for name, path in DEMO_STREAMS:
                path = Path(path)
                if not path.is_file():
                    # A clone outside the usual layout has no ../shared beside it: say so, not nothing.
                    self.stdout.write(self.style.WARNING(
                        f"Skipped demo run {name!r}: gg's recorded stream is not at {path} "
                        f"(../shared is absent beside this checkout); import one at /runs/import/."))
                    continue
                run, _ = services.run_get_or_create(name=name, source=Run.Source.IMPORT)
                with path.open("rb") as fh:
                    result = writer.append_stream(run, fh)
                self.stdout.write(f"Demo run {name!r}: {result.summary()}")
            for demo in DEMO_SPECS:
                run = launch_spec_file(DEMO_DIR / f"{demo}.spec.json", name=f"demo-{demo}")
                self.stdout.write(f"Demo run {run.name!r}: {start_run(run)}")
