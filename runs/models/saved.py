"""What operators save: launch configurations and named views of the runs list, comparison and
analysis. Not projections of any run (runs/models/__init__.py imports them)."""

from django.conf import settings
from django.db import models


class SavedConfiguration(models.Model):
    """A named launch configuration (the capability set a launch form builds)."""

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    spec = models.JSONField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name


class SavedView(models.Model):
    """A named runs-list filter, comparison or analysis: the page's query string, shared by URL."""

    class Kind(models.TextChoices):
        LIST = "list"
        COMPARE = "compare"
        ANALYSIS = "analysis"

    name = models.CharField(max_length=200)
    kind = models.CharField(max_length=16, choices=Kind.choices)
    query = models.TextField(blank=True)  # the query string, without the "?"
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["kind", "name", "id"]
        constraints = [models.UniqueConstraint(fields=["kind", "name"], name="saved_view_name_per_kind")]

    def __str__(self):
        return self.name
