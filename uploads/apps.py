from django.apps import AppConfig


class UploadsConfig(AppConfig):
    name = "uploads"

    def ready(self) -> None:
        # Attaches the OpenAPI description to the views (uploads/openapi.py).
        from uploads import openapi  # noqa: F401
