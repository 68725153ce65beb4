from django.apps import AppConfig


class StorageServiceConfig(AppConfig):
    name = "storage_service"
    verbose_name = "Storage service"

    def ready(self) -> None:
        # openapi registers the bearer-key security scheme with drf-spectacular; checks, the
        # checks of the admin's middleware, which API requests skip.
        from storage_service import checks, openapi  # noqa: F401
