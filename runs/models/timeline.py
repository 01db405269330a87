"""The Timeline's tables (runs/pages/timeline.py), folded by runs.ingest.fold_spans: one lane per agent,
its closed turns as spans, its blocked waits, and the turns and calls pre-bucketed by powers of two
of milliseconds, so the page reads rows by the pixel or by the turn in its window, never events.
A projection of the log like those in runs/models/__init__.py (which imports it), rebuilt with them.

Each table's indexes lead with its run, so no foreign-key index of its own (one less index a row
written). Moments are milliseconds since the Unix epoch (gg's stamps read by runs.stream.record.parse_timestamp),
so they do not depend on the run's first stamp; the page subtracts it."""

from datetime import datetime, timezone

from django.db import models

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
# TimelineBucket widths, 8 ms .. 2**23 ms (2.3 h), each four times the last (the fold writes each
# level's rows every chunk): the page reads the one from two to eight pixels wide.
LEVELS = range(3, 24, 2)
# A bucket marks its calls and failed results in SLOTS equal slots of its width (a bit each), so a
# bucket eight pixels wide still places each tick to half a pixel.
SLOTS = 16


def slot(ms, level) -> int:
    """The bit of `ms`'s slot in its bucket of `level` (bucket `ms // 2**level`)."""
    width = 1 << level
    return 1 << min(SLOTS - 1, int((ms % width) * SLOTS / width))


def epoch_ms(moment):
    """An aware datetime as the tables' milliseconds (None stays None)."""
    return None if moment is None else (moment - EPOCH).total_seconds() * 1000


def tick_text(ms, failed) -> str:
    """One call's moment in `ticks` (a failed result's marked "!"); `read_ticks` reads them back."""
    return f"{ms:.3f}{'!' if failed else ''} "


def read_ticks(text):
    """[(ms, failed)] of a `ticks` text."""
    return [(float(t.rstrip("!")), t.endswith("!")) for t in text.split()]


class TimelineLane(models.Model):
    """An agent's lane: its first and last moments (its first and last turn, call or spawn record)
    and what is still open: its current turn (a span once the next one starts) and a blocked wait."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="timeline_lanes", db_index=False)
    agent_id = models.CharField(max_length=200)
    marked = models.BooleanField(default=False)  # a mark folded: first_ms is the first one's (None: unread)
    first_ms = models.FloatField(null=True)
    last_ms = models.FloatField(null=True)  # the latest mark's (None when its stamp does not read)
    turn = models.PositiveIntegerField(default=0)  # the current turn (0: calls before the first)
    start_ms = models.FloatField(null=True)  # the current turn's turn_started
    end_ms = models.FloatField(null=True)  # its latest turn_timing (None: none yet)
    error = models.BooleanField(default=False)
    calls = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    ticks = models.TextField(blank=True)  # its calls' moments, a failed result's with "!" (TurnSpan.ticks)
    blocked_ms = models.FloatField(null=True)  # an open wait's start (agent_status blocked)

    def open_end(self):
        """Where the open turn ends: its latest turn_timing, else the lane's last moment."""
        if self.end_ms is not None:
            return self.end_ms
        return max(self.start_ms, self.last_ms if self.last_ms is not None else self.start_ms)

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["run", "agent_id"], name="timeline_lane_per_agent")]


class TurnSpan(models.Model):
    """A closed turn of an agent (the next one has started): from its turn_started to its latest
    turn_timing (untimed: to the next turn's start), with its calls. Turn 0: the calls before the first."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="turn_spans", db_index=False)
    agent_id = models.CharField(max_length=200)
    turn = models.PositiveIntegerField()
    start_ms = models.FloatField(null=True)
    end_ms = models.FloatField(null=True)
    error = models.BooleanField(default=False)
    calls = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    ticks = models.TextField(blank=True)  # "<ms> <ms>! …": each call's moment, each failed result's with "!"

    class Meta:
        app_label = "runs"
        indexes = [models.Index(fields=["run", "start_ms"]), models.Index(fields=["run", "agent_id", "start_ms"])]


class WaitSpan(models.Model):
    """A closed blocked wait: from agent_status blocked to the agent's next status."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="wait_spans", db_index=False)
    agent_id = models.CharField(max_length=200)
    start_ms = models.FloatField()
    end_ms = models.FloatField()

    class Meta:
        app_label = "runs"
        indexes = [models.Index(fields=["run", "start_ms"])]


class TimelineBucket(models.Model):
    """An agent's closed turns starting, and calls made, within bucket `b` of 2**level ms: what a
    window whose pixel is about that wide draws of them."""

    run = models.ForeignKey("runs.Run", on_delete=models.CASCADE, related_name="timeline_buckets", db_index=False)
    agent_id = models.CharField(max_length=200)
    level = models.PositiveSmallIntegerField()
    b = models.BigIntegerField()  # floor(ms / 2**level)
    turns = models.PositiveIntegerField(default=0)
    first_turn = models.PositiveIntegerField(null=True)
    last_turn = models.PositiveIntegerField(null=True)
    start_ms = models.FloatField(null=True)  # the earliest start of those turns
    end_ms = models.FloatField(null=True)  # the latest end
    error = models.BooleanField(default=False)
    call_slots = models.PositiveIntegerField(default=0)  # the slots (bits, `slot`) its calls fell in
    fail_slots = models.PositiveIntegerField(default=0)  # and its failed results

    class Meta:
        app_label = "runs"
        constraints = [models.UniqueConstraint(fields=["run", "level", "b", "agent_id"], name="timeline_bucket_per_agent")]
