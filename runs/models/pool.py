"""The message pool table: one row per message of an agent's pool (`context_message`, spec/stream.md
§4.14) and what it cost while resident, folded off each `prompt`'s pointers (§4.15, §7.6) by
runs.ingest.fold_pool; a projection of the log like those in runs/models/__init__.py (which imports
it), rebuilt with them."""

from django.db import models


class PooledMessage(models.Model):
    """A message of an agent's pool and its residency bill: a turn's window and the agent's costliest
    material are read here, never by re-reading the log."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="pooled_messages")
    agent_id = models.CharField(max_length=200)
    message_id = models.CharField(max_length=200)  # gg's content fingerprint
    role = models.CharField(max_length=16, blank=True)
    label = models.CharField(max_length=400, blank=True)
    band = models.CharField(max_length=64, blank=True)  # the band its latest pointer placed it on
    tool = models.CharField(max_length=200, blank=True)  # a tool message's: the call's name (its toolCallId's)
    tokens = models.BigIntegerField(null=True)  # its estimate; null: pointed to, never defined
    seq = models.PositiveBigIntegerField(null=True)  # its context_message
    spans = models.JSONField(default=list)  # [[first, last]]: the runs of consecutive turns it was resident
    billed = models.FloatField(default=0)  # input tokens billed to it, over every turn resident
    cost = models.FloatField(null=True)  # their USD, over the turns whose input cost was known
    estimated = models.BooleanField(default=False)  # some of `cost` priced from the model-price table

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["run", "agent_id", "message_id"], name="pooled_message_per_agent")]
        indexes = [models.Index(fields=["run", "agent_id", "billed"])]
