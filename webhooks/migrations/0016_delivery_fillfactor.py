"""Room on each page of webhooks_delivery for the lease a claim writes, so that update stays
on its page (a HOT update, no new entry in any of the table's four indexes): a delivery is
written three times (inserted, leased, ended), and the lease changes no indexed column.
Only pages written from now on keep the room."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("webhooks", "0015_event_to_events")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE webhooks_delivery SET (fillfactor = 70)",
            reverse_sql="ALTER TABLE webhooks_delivery RESET (fillfactor)",
        )
    ]
