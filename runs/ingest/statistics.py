"""PostgreSQL's planner statistics kept in step with a run the write path grows.

Until its tables are analyzed, PostgreSQL plans a run's reads for a few rows: the feed's last
window of a 200,000-event run, read as a bitmap of the whole run sorted for its last 500 rows, took
106 ms against 0.2 ms by the index once analyzed (its search 61 ms against under 2). Autovacuum
analyzes a grown table within a minute or so; an import read right after it, on a fresh database,
would wait for that. So each time a run doubles past `FIRST` records, if the statistics know fewer
than twice its records in the whole log, the database is analyzed: a few times in a big run's life
(sampling bounds each one's cost), and never once the log holds far more than the run.
"""

import logging

from django.db import DatabaseError, connection

from runs.models import Event

FIRST = 4096

log = logging.getLogger(__name__)


def crossed(before, after):
    """Whether a run growing from `before` to `after` records passed a power of two ≥ FIRST."""
    return after >= FIRST and after.bit_length() > max(before, FIRST - 1).bit_length()


def keep_up(before, after):
    """After a chunk took a run from `before` to `after` records and committed. Not inside a caller's
    transaction (ANALYZE would hold its lock until that commits), and a failure here fails nothing:
    the records are stored, and autovacuum catches up."""
    if connection.vendor != "postgresql" or connection.in_atomic_block or not crossed(before, after):
        return
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT reltuples FROM pg_class WHERE oid = %s::regclass", [Event._meta.db_table])
            (known,) = cursor.fetchone()  # -1 before the first ANALYZE
            if known < 2 * after:
                cursor.execute("ANALYZE")
    except DatabaseError:
        log.warning("the planner's statistics were not refreshed at %s records", after, exc_info=True)
