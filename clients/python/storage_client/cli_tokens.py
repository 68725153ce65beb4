"""``storage upload-tokens [ls|add|show|rm]``: mint, list, show and revoke upload tokens from
the shell."""

from __future__ import annotations

import argparse
import json

from storage_client.cli_output import emit
from storage_client.cli_parser import Commands, comma_list
from storage_client.client import Client
from storage_client.upload_tokens import UploadToken


def token_line(token: UploadToken) -> str:
    state = "revoked" if token.revoked_at else f"expires {token.expires_at.isoformat()}"
    return (
        f"{token.id}  {token.path or '/'}  {token.files_started}/{token.max_files} files  {state}"
    )


def cmd_tokens_ls(client: Client, args: argparse.Namespace) -> int:
    tokens = list(client.upload_tokens.list())
    return emit(args, [token.raw for token in tokens], *map(token_line, tokens))


def cmd_tokens_add(client: Client, args: argparse.Namespace) -> int:
    token, raw = client.upload_tokens.create(
        path=args.path,
        max_file_size_bytes=args.max_size,
        allowed_content_types=comma_list(args.types),
        max_files=args.max_files,
        expires_in_seconds=args.expires_in,
        metadata=json.loads(args.metadata) if args.metadata else None,
        allowed_origins=comma_list(args.origins),
    )
    return emit(
        args,
        {"uploadToken": token.raw, "token": raw},
        token_line(token),
        f"token: {raw}  (shown once: hand it to the page that uploads)",
    )


def cmd_tokens_show(client: Client, args: argparse.Namespace) -> int:
    token = client.upload_tokens.get(args.id)
    return emit(args, token.raw, token_line(token))


def cmd_tokens_rm(client: Client, args: argparse.Namespace) -> int:
    client.upload_tokens.revoke(args.id)
    return emit(args, {"id": args.id, "revoked": True}, f"revoked {args.id}")


def add_upload_token_commands(commands: Commands) -> None:
    tokens = commands.add(
        "upload-tokens", cmd_tokens_ls, "mint, list, show or revoke upload tokens"
    )
    actions = commands.actions(tokens)
    actions.add("ls", cmd_tokens_ls, "list the tokens, newest first")
    action = actions.add("add", cmd_tokens_add, "mint a token (shown once)")
    action.add_argument("--path", metavar="FOLDER", help="files go in this folder or below")
    action.add_argument("--max-size", type=int, metavar="BYTES", help="largest file")
    action.add_argument("--types", metavar="T1,T2", help="e.g. image/*,application/pdf")
    action.add_argument("--max-files", type=int, metavar="N", help="1 to 10000 (1)")
    action.add_argument("--expires-in", type=int, metavar="S", help="60 to 86400 (900)")
    action.add_argument("--metadata", metavar="JSON", help="set on every file")
    action.add_argument("--origins", metavar="O1,O2", help="e.g. https://app.example")
    action = actions.add("show", cmd_tokens_show, "show a token")
    action.add_argument("id", metavar="ID")
    action = actions.add("rm", cmd_tokens_rm, "revoke a token now")
    action.add_argument("id", metavar="ID")
