from django.apps import AppConfig


class StorageServiceConfig(AppConfig):
    name = "storage_service"
    verbose_name = "Storage service"

    def ready(self) -> None:
        # openapi registers its extensions (the bearer-key security scheme, the shapes, the
        # filter sets) with drf-spectacular.
        from storage_service import openapi  # noqa: F401
