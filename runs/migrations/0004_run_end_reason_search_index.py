"""Run.end_reason, and the full-text index of every record (runs.feed.search), filled for the
records already stored."""

from django.db import migrations, models


def create_index(apps, schema_editor):
    from runs.feed import search

    search.create_tables(schema_editor.connection)
    for pk in apps.get_model("runs", "Run").objects.values_list("pk", flat=True):
        search.reindex(pk)


def drop_index(apps, schema_editor):
    from runs.feed import search

    search.drop_tables(schema_editor.connection)


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0003_agent_context_error_types_suspended"),
    ]

    operations = [
        migrations.AddField(
            model_name="run",
            name="end_reason",
            field=models.CharField(blank=True, max_length=300),
        ),
        migrations.RunPython(create_index, drop_index),
    ]
