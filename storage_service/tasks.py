"""The kernel's periodic housekeeping (no app's data)."""

from __future__ import annotations

from celery import shared_task
from django.contrib.sessions.models import Session
from django.utils import timezone


@shared_task(name="storage_service.tasks.clear_expired_sessions")
def clear_expired_sessions() -> int:
    """Beat: delete expired admin sessions (Django keeps them until ``clearsessions`` runs).

    The same as ``manage.py clearsessions`` for the database backend, returning the count.
    """
    deleted, _ = Session.objects.filter(expire_date__lt=timezone.now()).delete()
    return deleted
