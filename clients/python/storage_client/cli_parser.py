"""The ``storage`` command's argument parsing: usage errors as one line and exit code 1, and
subcommands that each take the common options and name their handler."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Callable, NoReturn

from storage_client.cli_output import fail

if TYPE_CHECKING:
    from storage_client.client import Client

Handler = Callable[["Client", argparse.Namespace], int]


class Parser(argparse.ArgumentParser):
    """argparse, with its usage errors as one line and exit code 1, like every error."""

    def error(self, message: str) -> NoReturn:
        fail(f"{message} (see `{self.prog} --help`)")


def common_options() -> Parser:
    """``--json``, ``--api-key`` and ``--base-url``, taken by every subcommand."""
    # SUPPRESS: the options may come before or after the subcommand without one overwriting
    # the other with its default.
    common = Parser(add_help=False)
    common.add_argument(
        "--json", action="store_true", default=argparse.SUPPRESS, help="print JSON for scripts"
    )
    common.add_argument(
        "--api-key",
        default=argparse.SUPPRESS,
        metavar="KEY",
        help="API key (default: $STORAGE_API_KEY)",
    )
    common.add_argument(
        "--base-url",
        default=argparse.SUPPRESS,
        metavar="URL",
        help="the service's address (default: $STORAGE_BASE_URL)",
    )
    return common


class Commands:
    """The subcommands of one parser (``storage COMMAND``, or ``storage webhooks ACTION``)."""

    def __init__(
        self, parser: argparse.ArgumentParser, common: Parser, *, dest: str, metavar: str
    ) -> None:
        self._common = common
        self._choices = parser.add_subparsers(dest=dest, metavar=metavar, parser_class=Parser)

    def require(self) -> None:
        self._choices.required = True

    def add(self, name: str, handler: Handler, text: str) -> argparse.ArgumentParser:
        sub = self._choices.add_parser(name, parents=[self._common], help=text, description=text)
        sub.set_defaults(handler=handler)
        return sub

    def actions(self, parser: argparse.ArgumentParser) -> Commands:
        """The ACTIONs of a subcommand's ``parser``."""
        return Commands(parser, self._common, dest="action", metavar="ACTION")


def comma_list(value: str | None) -> list[str] | None:
    """An option's ``A,B,C`` as a list; None when the option was not given."""
    return [item.strip() for item in value.split(",") if item.strip()] if value else None
