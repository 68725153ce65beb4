"""``storage webhooks [ls|add|rm|rotate|replay]`` and ``storage events``: the endpoints and
the events they are sent."""

from __future__ import annotations

import argparse
import itertools

from storage_client.cli_output import emit, emit_json, event_line, webhook_line
from storage_client.cli_parser import Commands, comma_list
from storage_client.client import Client
from storage_client.models import Webhook

_SECRET_SHOWN_ONCE = "  (shown once: store it now)"


def cmd_webhooks_ls(client: Client, args: argparse.Namespace) -> int:
    webhooks = client.webhooks.list()
    return emit(args, [w.raw for w in webhooks], *map(webhook_line, webhooks))


def _emit_secret(args: argparse.Namespace, webhook: Webhook, secret: str, *notes: str) -> int:
    return emit(
        args,
        {"webhook": webhook.raw, "secret": secret},
        webhook_line(webhook),
        f"secret: {secret}{_SECRET_SHOWN_ONCE}",
        *notes,
    )


def cmd_webhooks_add(client: Client, args: argparse.Namespace) -> int:
    webhook, secret = client.webhooks.create(args.url, events=comma_list(args.events))
    return _emit_secret(args, webhook, secret)


def cmd_webhooks_rm(client: Client, args: argparse.Namespace) -> int:
    client.webhooks.delete(args.id)
    return emit(args, {"id": args.id, "deleted": True}, f"deleted {args.id}")


def cmd_webhooks_rotate(client: Client, args: argparse.Namespace) -> int:
    webhook, secret = client.webhooks.rotate_secret(args.id, overlap_seconds=args.overlap)
    notes = []
    if webhook.previous_secret_expires_at is not None:
        ends = webhook.previous_secret_expires_at.isoformat(timespec="seconds")
        notes.append(f"the old secret also signs until {ends}")
    return _emit_secret(args, webhook, secret, *notes)


def cmd_webhooks_replay(client: Client, args: argparse.Namespace) -> int:
    count = client.webhooks.replay(args.id, since=args.since, until=args.until)
    return emit(args, {"deliveries": count}, f"{count} deliveries made for {args.id}")


def cmd_events(client: Client, args: argparse.Namespace) -> int:
    if args.id:
        event = client.events.get(args.id)
        emit_json(event.raw)  # the envelope, as its webhooks received it
        return 0
    events = list(itertools.islice(client.events.list(type=args.type), args.limit))
    return emit(args, [e.raw for e in events], *map(event_line, events))


def add_webhook_commands(commands: Commands) -> None:
    hooks = commands.add("webhooks", cmd_webhooks_ls, "list, add or remove webhook endpoints")
    actions = commands.actions(hooks)
    actions.add("ls", cmd_webhooks_ls, "list the endpoints")
    action = actions.add("add", cmd_webhooks_add, "register an endpoint")
    action.add_argument("url", metavar="URL")
    action.add_argument("--events", metavar="E1,E2", help="event types (default: all)")
    action = actions.add("rm", cmd_webhooks_rm, "remove an endpoint")
    action.add_argument("id", metavar="ID")
    action = actions.add("rotate", cmd_webhooks_rotate, "give an endpoint a new signing secret")
    action.add_argument("id", metavar="ID")
    action.add_argument(
        "--overlap",
        type=int,
        metavar="S",
        help="seconds the old secret still signs, 0 to 604800 (86400)",
    )
    action = actions.add(
        "replay", cmd_webhooks_replay, "send an endpoint the events of a window again"
    )
    action.add_argument("id", metavar="ID")
    action.add_argument("--since", required=True, metavar="TIME", help="e.g. 2026-11-24T00:00Z")
    action.add_argument("--until", metavar="TIME", help="default: now")


def add_event_commands(commands: Commands) -> None:
    sub = commands.add("events", cmd_events, "list recent events, newest first, or show one")
    sub.add_argument("id", nargs="?", metavar="EVENT_ID", help="show this event's envelope")
    sub.add_argument("--type", metavar="TYPE", help="only this event type (file.uploaded, ...)")
    sub.add_argument("--limit", type=int, default=20, metavar="N", help="at most N (20)")
