import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "storage_service.settings.dev")

app = Celery("storage_service")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
