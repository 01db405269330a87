"""manage.py ingest_token USER [--label TEXT] [--run NAME ...] — mint a bearer token for
POST /api/runs/<run>/events (with --run, one that writes only into the runs named)."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from runs.ingest.services import run_name_problem
from runs.models import IngestToken


class Command(BaseCommand):
    help = "Create an ingest token for USER and print its key (use it as 'Authorization: Bearer <key>')."

    def add_arguments(self, parser):
        parser.add_argument("user", help="Username the token acts for.")
        parser.add_argument("--label", default="", help="What the token is for.")
        parser.add_argument("--run", action="append", default=[], dest="runs", metavar="NAME",
                            help="Limit the token to this run name (repeat for more); default: any run USER created.")

    def handle(self, *args, user, label="", runs=(), **options):
        User = get_user_model()
        try:
            owner = User.objects.get(**{User.USERNAME_FIELD: user})
        except User.DoesNotExist as exc:
            raise CommandError(f"No user {user!r}.") from exc
        for name in runs:
            problem = run_name_problem(name)
            if problem:
                raise CommandError(f"--run {name!r}: {problem}")
        names = "\n".join(dict.fromkeys(name.strip() for name in runs))
        token = IngestToken.objects.create(user=owner, label=label, run_names=names)
        self.stdout.write(token.key)
