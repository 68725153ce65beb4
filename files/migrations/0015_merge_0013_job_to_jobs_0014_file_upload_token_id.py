"""Joins the two lines of files' migrations: Job's move to the jobs app, and the placeholder and
upload token columns. They touch different models, so either order gives the same state."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("files", "0013_job_to_jobs"),
        ("files", "0014_file_upload_token_id"),
    ]

    operations = []
