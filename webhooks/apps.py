from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        # Every event recorded from now on writes its deliveries in its own statement.
        from events import outbox
        from webhooks.services import FOLLOWER

        outbox.register(FOLLOWER)
