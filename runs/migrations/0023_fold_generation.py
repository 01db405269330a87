from django.db import migrations, models


class Migration(migrations.Migration):
    """Runs stored before this migration were folded by an older fold: generation 0 (stale until
    rebuilt); runs created from now on carry the current generation."""

    dependencies = [
        ('runs', '0022_pooled_message_tool'),
    ]

    operations = [
        migrations.AddField(
            model_name='run',
            name='fold_generation',
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AlterField(
            model_name='run',
            name='fold_generation',
            field=models.PositiveIntegerField(default=1),
        ),
    ]
