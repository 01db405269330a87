"""Build an arm's sandbox guest (componentize-py, componentize-js) and cache it compiled under var/sandbox/."""

from django.core.management.base import BaseCommand

from runs.engine.sandbox.guest import BUILDS, artifact_path, build_guest


class Command(BaseCommand):
    help = "Build a sandbox guest from wit/gg-sandbox.wit and its arm's SDK, and cache it compiled."

    def add_arguments(self, parser):
        parser.add_argument("--language", choices=sorted(BUILDS), default="python", help="the arm (default: python)")
        parser.add_argument("--force", action="store_true", help="rebuild even when a current artifact exists")

    def handle(self, *args, language="python", force=False, **options):
        existed = artifact_path(language).exists()
        path = build_guest(language, force=force, log=lambda line: self.stdout.write(line))
        if existed and not force:
            self.stdout.write(f"the guest is current: {path}")
