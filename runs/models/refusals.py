"""The refusal roster's tables (design.md "Refusal roster"), projections of the log like those in
runs/models/__init__.py (which imports them), written by the fold and rebuilt with them."""

from django.db import models


class RefusalRow(models.Model):
    """What the Refusals roster reads of the log, kept by the fold (runs.ingest.fold_refusals): each
    failed api_result, each gg line saying a call was refused before it ran (`line`) and each line
    counting what gg's cap suppressed (`capped`). The fold matches a line to the failed result of its
    call (`partner`, each the other's seq); the row holding a refused call is its `entry`, in the
    group `key` (its operation, else the name gg's line quotes). Never the log: the pages read this."""

    FAILED, LINE, CAPPED = "failed", "line", "capped"

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="refusal_rows")
    seq = models.PositiveBigIntegerField()
    kind = models.CharField(max_length=8)  # failed | line | capped
    agent_id = models.CharField(max_length=200, blank=True)
    turn = models.PositiveIntegerField(null=True)
    operation = models.CharField(max_length=200, blank=True)  # a failed result's; a line's, read off its name
    failure = models.CharField(max_length=64, blank=True)  # a failed result's (an entry: its call's)
    message = models.TextField(blank=True)  # a line's (an entry: its call's)
    written = models.CharField(max_length=200, blank=True)  # the name gg's line quotes (an entry: its call's)
    partner = models.PositiveBigIntegerField(null=True)  # the seq of the row matched to this one
    entry = models.BooleanField(default=False)  # this row holds a refused call of the roster
    key = models.CharField(max_length=200, blank=True)  # an entry's group: its operation, else `written`
    suppressed = models.PositiveIntegerField(default=0)  # a capped line's count

    class Meta:
        indexes = [
            models.Index(fields=["run", "kind", "seq"]),
            # A group's refused calls in order (the roster's pages of them), however big the run.
            models.Index(fields=["run", "agent_id", "key", "seq"], condition=models.Q(entry=True),
                         name="refusal_entries"),
            # What the fold may still match: the unmatched rows of an agent's latest turns.
            models.Index(fields=["run", "agent_id", "turn"], condition=models.Q(partner__isnull=True),
                         name="refusal_unmatched"),
        ]


class RefusalGroup(models.Model):
    """The roster's running figures per (agent, call refused), kept by the fold beside its RefusalRows
    (runs.ingest.fold_refusals): the Refusals tab, the report and the runs list's facts read these."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="refusal_groups")
    agent_id = models.CharField(max_length=200, blank=True)
    key = models.CharField(max_length=200, blank=True)  # the operation, else the name gg's line quotes
    operation = models.CharField(max_length=200, blank=True)
    written = models.CharField(max_length=200, blank=True)  # the first name gg's lines quote for it
    count = models.PositiveIntegerField(default=0)
    failures = models.JSONField(default=dict)  # {failure class, or "" for none: n}
    messages = models.JSONField(default=dict)  # {message: [n, first seq]}, the first few distinct (fold_refusals.MESSAGES_KEPT)
    first_turn = models.PositiveIntegerField(null=True)
    last_turn = models.PositiveIntegerField(null=True)
    first_seq = models.PositiveBigIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "agent_id", "key"], name="refusal_group_per_call")]
