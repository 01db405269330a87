"""manage.py ingest_token USER [--label TEXT] — mint a bearer token for POST /api/runs/<run>/events."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError

from runs.models import IngestToken


class Command(BaseCommand):
    help = "Create an ingest token for USER and print its key (use it as 'Authorization: Bearer <key>')."

    def add_arguments(self, parser):
        parser.add_argument("user", help="Username the token acts for.")
        parser.add_argument("--label", default="", help="What the token is for.")

    def handle(self, *args, user, label="", **options):
        User = get_user_model()
        try:
            owner = User.objects.get(**{User.USERNAME_FIELD: user})
        except User.DoesNotExist as exc:
            raise CommandError(f"No user {user!r}.") from exc
        token = IngestToken.objects.create(user=owner, label=label)
        self.stdout.write(token.key)
