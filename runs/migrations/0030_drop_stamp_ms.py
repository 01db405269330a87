"""gg_stamp_ms(text) is no longer called: the Timeline reads the buckets the fold writes
(TimelineBucket), so the function 0021 created on PostgreSQL goes. Reversing recreates it."""

from importlib import import_module

from django.db import migrations

stamp_ms = import_module("runs.migrations.0021_stamp_ms_postgresql")


class Migration(migrations.Migration):

    dependencies = [
        ("runs", "0029_pool_ledger"),
    ]

    operations = [
        migrations.RunPython(stamp_ms.on_postgresql(stamp_ms.DROP), stamp_ms.on_postgresql(stamp_ms.CREATE)),
    ]
