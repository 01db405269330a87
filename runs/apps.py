from django.apps import AppConfig
from django.db.models.signals import post_migrate


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # The models (and so the facts' fold) can be imported only once the app registry is ready.
        from runs.ingest import facts

        post_migrate.connect(facts.after_migrate, sender=self, dispatch_uid="runs.facts.after_migrate")
