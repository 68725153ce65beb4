from celery import Celery
from celery.signals import worker_process_init

from storage_service.cpupriority import lower_worker_priority
from storage_service.settings.profile import require_profile

# No default profile: a worker or beat started without DJANGO_SETTINGS_MODULE refuses to
# start (a webhook worker on the dev profile would skip the delivery-time SSRF check).
require_profile()

app = Celery("storage_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
# Each prefork pool process (the transforms) runs below the API's CPU priority.
worker_process_init.connect(lower_worker_priority)
