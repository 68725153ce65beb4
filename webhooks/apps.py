from django.apps import AppConfig


class WebhooksConfig(AppConfig):
    name = "webhooks"

    def ready(self) -> None:
        # Attaches the OpenAPI description to the views (webhooks/openapi.py).
        from webhooks import openapi  # noqa: F401
