"""The PostgreSQL full-text index splits words as FTS5 does (runs.feed.search._words_only): what it
held was parsed by PostgreSQL's own rules (`notes/zebra.txt` one token, tags dropped), so it is
built again from the log. Nothing to do on SQLite."""

from django.db import migrations


def reindex_postgresql(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from runs.feed import search

    for pk in apps.get_model("runs", "Run").objects.values_list("pk", flat=True):
        search.reindex(pk)


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0012_feed_checkpoints"),
    ]

    operations = [
        migrations.RunPython(reindex_postgresql, migrations.RunPython.noop),
    ]
