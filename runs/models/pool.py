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
    # Its bill until it last entered the window (runs.stream.material.settle adds what it was billed since
    # while resident): `spans` [[first, last]], the runs of consecutive turns it was resident (a resident
    # one's last run reaches its agent's latest prompt); `billed` the input tokens billed to it; `cost`
    # their USD, over the turns whose input cost was known; `estimated`: some of it priced from the table.
    spans = models.JSONField(default=list)
    billed = models.FloatField(default=0)
    cost = models.FloatField(null=True)
    estimated = models.BooleanField(default=False)
    # Resident (in its agent's latest prompt): its size times its pointers there, and its agent's ledger
    # head (Agent.material["ledger"]) as it entered; null when not resident.
    weight = models.FloatField(null=True)
    since_factor = models.FloatField(null=True)
    since_cost = models.FloatField(null=True)
    since_priced = models.PositiveIntegerField(null=True)
    since_estimated = models.PositiveIntegerField(null=True)

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["run", "agent_id", "message_id"], name="pooled_message_per_agent")]
        # An agent's costliest material (runs.pages.material): its settled rows by bill, and apart
        # the few resident ones, whose bill is their column plus what their agent's head adds.
        indexes = [models.Index(fields=["run", "agent_id", "-billed", "message_id"], name="pooled_message_by_bill"),
                   models.Index(fields=["run", "agent_id"], condition=models.Q(weight__isnull=False),
                                name="pooled_message_resident")]
