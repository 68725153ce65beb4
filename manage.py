#!/usr/bin/env python
import sys


def main() -> None:
    from storage_service.settings.profile import require_profile

    # No default profile: `DJANGO_SETTINGS_MODULE=storage_service.settings.dev` in a checkout.
    require_profile()
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)


if __name__ == "__main__":
    main()
