from django.apps import AppConfig


class FilesConfig(AppConfig):
    name = "files"

    def ready(self) -> None:
        # Imported here, not at the top: models load only once the app registry is ready.
        from accounts.usage import project_storage
        from files.services.folders import KINDS
        from files.usage import project_stored
        from jobs.kinds import register

        # The operators' usage page (accounts) counts what files stores; accounts does not
        # import files (storage_service/hooks.py).
        project_storage.register(project_stored)

        # The folder operations are jobs: the runner (jobs) does their batches, which are
        # files' own; jobs does not import files.
        for type, kind in KINDS.items():
            register(type, kind)
