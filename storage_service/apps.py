from django.apps import AppConfig
from django.core.signals import request_started
from django.db.backends.signals import connection_created


class StorageServiceConfig(AppConfig):
    name = "storage_service"
    verbose_name = "Storage service"

    def ready(self) -> None:
        # openapi registers its extensions (the bearer-key security scheme, the shapes, the
        # filter sets) with drf-spectacular.
        from storage_service import openapi  # noqa: F401
        from storage_service.dbtypes import use_compiled_timestamptz

        connection_created.connect(use_compiled_timestamptz, dispatch_uid="compiled-timestamptz")
        from storage_service.dbhealth import check_idle_connections

        # After Django's own receiver, connected when django.db was imported.
        request_started.connect(check_idle_connections, dispatch_uid="check-idle-connections")
