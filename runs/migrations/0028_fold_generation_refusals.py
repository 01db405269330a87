from django.db import migrations, models


class Migration(migrations.Migration):
    """Refusals matched to their calls and grouped (0027): runs folded before it are stale until rebuilt
    (`manage.py rebuild_projections --stale`, which bootstrap runs)."""

    dependencies = [
        ('runs', '0027_refusal_groups'),
    ]

    operations = [
        migrations.AlterField(
            model_name='run',
            name='fold_generation',
            field=models.PositiveIntegerField(default=3),
        ),
    ]
