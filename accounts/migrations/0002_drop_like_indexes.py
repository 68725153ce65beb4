from django.db import migrations

from storage_service.migration_ops import drop_like_indexes


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_initial")]

    operations = [drop_like_indexes("accounts_apikey")]
