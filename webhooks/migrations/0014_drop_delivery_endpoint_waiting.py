"""delivery_endpoint_waiting (endpoint) of the PENDING rows with no attempt is dropped: the
replay's count of an endpoint's waiting rows is read through delivery_endpoint_due (endpoint,
next_attempt_at) of the PENDING rows, filtering ``attempts = 0`` on the rows it reads (at most
the replay's threshold and the endpoint's rows being retried). Every delivery made, 100,000
of them for a folder move of 100,000 files, no longer writes an entry in it.
"""

from django.contrib.postgres.operations import RemoveIndexConcurrently
from django.db import migrations


class Migration(migrations.Migration):
    # CONCURRENTLY: deliveries are written all the time; dropping must not block them.
    atomic = False

    dependencies = [
        ("webhooks", "0013_delivery_endpoint_due"),
    ]

    operations = [
        RemoveIndexConcurrently(model_name="delivery", name="delivery_endpoint_waiting"),
    ]
