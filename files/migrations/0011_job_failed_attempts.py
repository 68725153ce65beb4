from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0010_move_friendly_indexes"),
    ]

    operations = [
        migrations.AddField(
            model_name="job",
            name="failed_attempts",
            field=models.PositiveSmallIntegerField(default=0),
        ),
    ]
