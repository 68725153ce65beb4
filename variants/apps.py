from django.apps import AppConfig


class VariantsConfig(AppConfig):
    name = "variants"

    def ready(self) -> None:
        # Attaches the OpenAPI description to the views (variants/openapi.py).
        from variants import openapi  # noqa: F401
