"""The memory revision table: one row per `memory_revision` record (spec/stream.md §4.26), a projection
of the log like those in runs/models/__init__.py (which imports it), written by the fold and rebuilt with them."""

from django.db import models


class MemoryRevision(models.Model):
    """One `memory_revision`, attributed to the store its author last reported, with the turn it came
    in: a memory store's revision history reads this narrow table, never the log."""

    BODY_HEAD = 300  # the body is in the record; the history shows its first characters

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="memory_revisions")
    seq = models.PositiveBigIntegerField()
    module_id = models.CharField(max_length=200, blank=True)
    agent_id = models.CharField(max_length=200, blank=True)
    turn = models.PositiveIntegerField(null=True)
    name = models.CharField(max_length=200, blank=True)
    revision = models.PositiveBigIntegerField(null=True)
    change = models.CharField(max_length=32, blank=True)  # written | updated | deleted
    description = models.TextField(blank=True)
    length = models.PositiveBigIntegerField(null=True)  # `len`: the memory's characters after the change
    lines = models.PositiveBigIntegerField(null=True)
    body_head = models.TextField(blank=True)

    class Meta:
        app_label = "runs"
        indexes = [models.Index(fields=["run", "module_id", "seq"])]
