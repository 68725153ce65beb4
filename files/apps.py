from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        # Attaches the OpenAPI description to the views (files/openapi.py).
        from files import openapi  # noqa: F401
