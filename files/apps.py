from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        # Imported here, not at the top: models load only once the app registry is ready.
        from accounts.usage import project_storage
        from files.usage import project_stored

        # The operators' usage page (accounts) counts what files stores; accounts does not
        # import files (storage_service/hooks.py).
        project_storage.register(project_stored)
