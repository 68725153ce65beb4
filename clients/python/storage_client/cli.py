"""The ``storage`` command: the client's operations from a shell.

Every subcommand takes ``--json`` (the API's own JSON on stdout, for scripts) and
``--api-key``/``--base-url`` (else ``STORAGE_API_KEY``/``STORAGE_BASE_URL``). Errors are one
line on stderr and exit code 1. Progress bars go to stderr, only when it is a terminal.
The subcommands live by subject: ``cli_files``, ``cli_folders``, ``cli_webhooks`` and
``cli_tokens``.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable

from storage_client._version import __version__
from storage_client.cli_files import add_file_commands
from storage_client.cli_folders import add_folder_commands
from storage_client.cli_output import PROG, fail
from storage_client.cli_parser import Commands, Parser, common_options
from storage_client.cli_tokens import add_upload_token_commands
from storage_client.cli_webhooks import add_event_commands, add_webhook_commands
from storage_client.client import Client
from storage_client.errors import StorageError


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = Parser(
        prog=PROG,
        description="Upload, list, download and manage files of the storage service.",
        parents=[common],
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    commands = Commands(parser, common, dest="command", metavar="COMMAND")
    commands.require()
    add_file_commands(commands)
    add_folder_commands(commands)
    add_webhook_commands(commands)
    add_upload_token_commands(commands)
    add_event_commands(commands)
    return parser


def main(argv: Iterable[str] | None = None) -> int:
    args = build_parser().parse_args(list(argv) if argv is not None else None)
    args.json = getattr(args, "json", False)
    try:
        client = Client(
            api_key=getattr(args, "api_key", None) or os.environ.get("STORAGE_API_KEY"),
            base_url=getattr(args, "base_url", None) or os.environ.get("STORAGE_BASE_URL"),
            delivery_key=os.environ.get("STORAGE_DELIVERY_KEY"),
        )
    except StorageError as exc:
        fail(str(exc))
    try:
        with client:
            code: int = args.handler(client, args)
            return code
    except StorageError as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{exc.filename or ''}: {exc.strerror or exc}".lstrip(": "))
    except KeyboardInterrupt:
        fail("interrupted")


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
