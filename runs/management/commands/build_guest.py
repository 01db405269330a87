"""Build the Python-arm guest (componentize-py) and cache it compiled under var/sandbox/."""

from django.core.management.base import BaseCommand

from runs.engine.sandbox.guest import artifact_path, build_guest


class Command(BaseCommand):
    help = "Build the Python sandbox guest from wit/gg-sandbox.wit and surfaces/sdk, and cache it compiled."

    def add_arguments(self, parser):
        parser.add_argument("--force", action="store_true", help="rebuild even when a current artifact exists")

    def handle(self, *args, force=False, **options):
        existed = artifact_path().exists()
        path = build_guest(force=force, log=lambda line: self.stdout.write(line))
        if existed and not force:
            self.stdout.write(f"the guest is current: {path}")
