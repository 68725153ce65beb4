from django.apps import AppConfig


class StorageServiceConfig(AppConfig):
    name = "storage_service"
    verbose_name = "Storage service"
