from django.apps import AppConfig


class UploadsConfig(AppConfig):
    name = "uploads"

    def ready(self) -> None:
        # Imported here, not at the top: models load only once the app registry is ready.
        from files import hooks as file_hooks
        from uploads.auth import token_types
        from uploads.services import multipart_complete_refusal

        # files' single-PUT complete must refuse a multipart file; files does not import us.
        file_hooks.single_complete_refusal.register(multipart_complete_refusal)
        # files checks a token-started file's real type against its token's types.
        file_hooks.upload_token_types.register(token_types)
