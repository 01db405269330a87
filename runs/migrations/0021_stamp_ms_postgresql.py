"""gg_stamp_ms(text): a stored stamp (gg's, verbatim) as ms since the epoch, NULL where PostgreSQL
cannot read it as a date and time — as julianday() answers NULL on SQLite. The Timeline buckets its
marks in the database with it; a bare cast would fail the whole page on one bad stamp
("2026-02-30…"), and would read words such as 'yesterday' as times. Nothing to do on SQLite."""

from django.db import migrations

CREATE = r"""
CREATE OR REPLACE FUNCTION gg_stamp_ms(stamp text) RETURNS double precision
LANGUAGE plpgsql STABLE STRICT PARALLEL SAFE AS $$
BEGIN
  IF stamp !~ '^\d{4}-\d\d-\d\d[T ]\d\d:\d\d' THEN
    RETURN NULL;
  END IF;
  RETURN EXTRACT(EPOCH FROM stamp::timestamptz) * 1000;
EXCEPTION WHEN others THEN
  RETURN NULL;
END $$
"""
DROP = "DROP FUNCTION IF EXISTS gg_stamp_ms(text)"


def on_postgresql(sql):
    def run(apps, schema_editor):
        if schema_editor.connection.vendor == "postgresql":
            schema_editor.execute(sql)
    return run


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0020_message_pool"),
    ]

    operations = [
        migrations.RunPython(on_postgresql(CREATE), on_postgresql(DROP)),
    ]
