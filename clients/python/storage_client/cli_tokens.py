"""``storage upload-tokens``: mint, list, show and revoke upload tokens from the shell."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

from storage_client.client import Client
from storage_client.upload_tokens import UploadToken


def _emit_json(value: Any) -> None:
    # cli.emit_json's output (cli imports this module, so it cannot be imported here).
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def token_line(token: UploadToken) -> str:
    state = "revoked" if token.revoked_at else f"expires {token.expires_at.isoformat()}"
    return (
        f"{token.id}  {token.path or '/'}  {token.files_started}/{token.max_files} files  {state}"
    )


def _csv(value: str | None) -> list[str] | None:
    return [item.strip() for item in value.split(",") if item.strip()] if value else None


def cmd_tokens_ls(client: Client, args: argparse.Namespace) -> int:
    tokens = list(client.upload_tokens.list())
    if args.json:
        _emit_json([token.raw for token in tokens])
    else:
        for token in tokens:
            print(token_line(token))
    return 0


def cmd_tokens_add(client: Client, args: argparse.Namespace) -> int:
    token, raw = client.upload_tokens.create(
        path=args.path,
        max_file_size_bytes=args.max_size,
        allowed_content_types=_csv(args.types),
        max_files=args.max_files,
        expires_in_seconds=args.expires_in,
        metadata=json.loads(args.metadata) if args.metadata else None,
        allowed_origins=_csv(args.origins),
    )
    if args.json:
        _emit_json({"uploadToken": token.raw, "token": raw})
    else:
        print(token_line(token))
        print(f"token: {raw}  (shown once: hand it to the page that uploads)")
    return 0


def cmd_tokens_show(client: Client, args: argparse.Namespace) -> int:
    token = client.upload_tokens.get(args.id)
    if args.json:
        _emit_json(token.raw)
    else:
        print(token_line(token))
    return 0


def cmd_tokens_rm(client: Client, args: argparse.Namespace) -> int:
    client.upload_tokens.revoke(args.id)
    if args.json:
        _emit_json({"id": args.id, "revoked": True})
    else:
        print(f"revoked {args.id}")
    return 0


def add_upload_token_commands(
    add: Callable[[str, Callable[[Client, argparse.Namespace], int], str], Any],
    common: argparse.ArgumentParser,
    parser_class: type[argparse.ArgumentParser],
) -> None:
    """``upload-tokens [ls|add|show|rm]``, registered by cli.build_parser."""
    tokens = add("upload-tokens", cmd_tokens_ls, "mint, list, show or revoke upload tokens")
    actions = tokens.add_subparsers(dest="action", metavar="ACTION", parser_class=parser_class)
    action = actions.add_parser("ls", parents=[common], help="list the tokens, newest first")
    action.set_defaults(handler=cmd_tokens_ls)
    action = actions.add_parser("add", parents=[common], help="mint a token (shown once)")
    action.add_argument("--path", metavar="FOLDER", help="files go in this folder or below")
    action.add_argument("--max-size", type=int, metavar="BYTES", help="largest file")
    action.add_argument("--types", metavar="T1,T2", help="e.g. image/*,application/pdf")
    action.add_argument("--max-files", type=int, metavar="N", help="1 to 10000 (1)")
    action.add_argument("--expires-in", type=int, metavar="S", help="60 to 86400 (900)")
    action.add_argument("--metadata", metavar="JSON", help="set on every file")
    action.add_argument("--origins", metavar="O1,O2", help="e.g. https://app.example")
    action.set_defaults(handler=cmd_tokens_add)
    action = actions.add_parser("show", parents=[common], help="show a token")
    action.add_argument("id", metavar="ID")
    action.set_defaults(handler=cmd_tokens_show)
    action = actions.add_parser("rm", parents=[common], help="revoke a token now")
    action.add_argument("id", metavar="ID")
    action.set_defaults(handler=cmd_tokens_rm)
