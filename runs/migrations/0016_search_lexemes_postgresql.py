"""The PostgreSQL full-text index holds the words runs.feed.search.lexemes splits (array_to_tsvector,
no positions) and the query asks for them as they are: what it held was split by to_tsvector's
parser, which cuts some words these keep whole (`x²`), so it is built again from the log. Nothing to
do on SQLite."""

from django.db import migrations


def reindex_postgresql(apps, schema_editor):
    if schema_editor.connection.vendor != "postgresql":
        return
    from runs.feed import search

    for pk in apps.get_model("runs", "Run").objects.values_list("pk", flat=True):
        search.reindex(pk)


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0015_agent_stamps"),
    ]

    operations = [
        migrations.RunPython(reindex_postgresql, migrations.RunPython.noop),
    ]
