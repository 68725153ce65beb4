from django.apps import AppConfig


class StorageServiceConfig(AppConfig):
    name = "storage_service"
    verbose_name = "Storage service"

    def ready(self) -> None:
        # Registers the bearer-key security scheme with drf-spectacular.
        from storage_service import openapi  # noqa: F401
        # The checks of the admin's middleware, which API requests skip.
        from storage_service import checks  # noqa: F401
