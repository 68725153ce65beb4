from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        # Attaches the OpenAPI description to the views (files/openapi.py).
        # Imported here, not at the top: models load only once the app registry is ready.
        from accounts.usage import project_storage
        from files import openapi  # noqa: F401
        from files.usage import project_stored

        # The operators' usage page (accounts) counts what files stores; accounts does not
        # import files (storage_service/hooks.py).
        project_storage.register(project_stored)
