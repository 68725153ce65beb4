from celery import Celery

from storage_service.settings.profile import require_profile

# No default profile: a worker or beat started without DJANGO_SETTINGS_MODULE refuses to
# start (a webhook worker on the dev profile would skip the delivery-time SSRF check).
require_profile()

app = Celery("storage_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
