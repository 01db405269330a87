import gc

from django.apps import AppConfig
from django.db.models.signals import post_migrate


GC_YOUNG_THRESHOLD = 10_000  # allocations between two young collections (Python: 700)


class RunsConfig(AppConfig):
    name = "runs"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Every process (Daphne, the worker, manage.py, the benches): a page or report over a run of
        # thousands of agents makes a few hundred thousand objects that all live until it is written, and
        # at Python's default (a young collection every 700 allocations) the collector walked them again
        # and again: served, the report of 11,495 agents 2.05 -> 1.41 s (README "Runs of many agents");
        # in-process, the Agents tab of 11,500 agents 1.62 -> 1.17 s, bench/ingest 0.37x -> 0.39x.
        gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
        # The models (and so the facts' fold) can be imported only once the app registry is ready.
        from runs.ingest import facts

        post_migrate.connect(facts.after_migrate, sender=self, dispatch_uid="runs.facts.after_migrate")
