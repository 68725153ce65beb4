"""Event moved from webhooks to events in Django's state only: a database holding events and
deliveries made before the move keeps every row, read back through the moved model, and the
event's content type (with its permissions) follows it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.contrib.auth.models import Permission
from django.contrib.contenttypes.models import ContentType
from django.core.management import call_command
from django.db import connection

from events.models import Event
from events.services import events_scrub_file
from storage_service.ids import new_id
from tests.factories import Actor
from webhooks.models import Delivery, Endpoint

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def before_the_move() -> Iterator[None]:
    """The database as it was before events existed; migrated forward again afterwards,
    whatever the test did."""
    call_command("migrate", "events", "zero", verbosity=0)
    try:
        yield
    finally:
        call_command("migrate", verbosity=0)


def test_events_made_before_the_move_are_read_through_the_events_app(
    owner: Actor, before_the_move: None
) -> None:
    endpoint = Endpoint.objects.create(
        **owner.tenant.owner(), url="https://93.184.215.14/hook", secret="whsec_x"
    )
    event_id, delivery_id = new_id("evt"), new_id("dl")
    old_type = ContentType.objects.get(app_label="webhooks", model="event")
    with connection.cursor() as cursor:
        cursor.execute(
            """
            INSERT INTO webhooks_event (id, project_id, mode, type, data, created_at)
            VALUES (%(event)s, %(project)s, 'test', 'file.uploaded',
                    '{"fileId": "file_x", "filename": "a.txt", "size": 3}', now())
            """,
            {"event": event_id, "project": owner.project.id},
        )
        cursor.execute(
            """
            INSERT INTO webhooks_delivery
                (id, endpoint_id, event_id, status, attempts, created_at)
            VALUES (%(delivery)s, %(endpoint)s, %(event)s,
                    'DELIVERED', 1, now())
            """,
            {"delivery": delivery_id, "endpoint": endpoint.id, "event": event_id},
        )

    call_command("migrate", verbosity=0)

    event = Event.objects.get(id=event_id)
    assert (event.project_id, event.mode, event.type) == (owner.project.id, "test", "file.uploaded")
    assert event.data == {"fileId": "file_x", "filename": "a.txt", "size": 3}
    delivery = Delivery.objects.select_related("event").get(id=delivery_id)
    assert delivery.event == event
    assert list(event.deliveries.all()) == [delivery]
    # The moved model's table is written as before (a purge's scrub of the file).
    assert events_scrub_file(project_id=owner.project.id, file_id="file_x") == 1
    event.refresh_from_db()
    assert event.data == {"fileId": "file_x", "size": 3}
    # The same content type row, now the events app's, with its permissions.
    new_type = ContentType.objects.get_for_model(Event)
    assert (new_type.id, new_type.app_label) == (old_type.id, "events")
    assert not ContentType.objects.filter(app_label="webhooks", model="event").exists()
    assert Permission.objects.filter(content_type=new_type, codename="view_event").exists()
