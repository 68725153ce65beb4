from django.apps import AppConfig


class VariantsConfig(AppConfig):
    name = "variants"

    def ready(self) -> None:
        # Imported here, not at the top: models load only once the app registry is ready.
        from files import hooks as file_hooks
        from variants.services import thumbnail_schedule, variants_discard_outputs

        # files announces; it does not import us (storage_service/hooks.py).
        file_hooks.version_published.register(thumbnail_schedule)
        file_hooks.file_purged.register(variants_discard_outputs)
