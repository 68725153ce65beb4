"""Which projects' files just changed, told to the processes that keep what they read of them.

Every change to a file, and to what reads it (a delivery key's revocation), commits with
something that calls ``announce_after_commit``: recording an event does (events/services.py),
and the contract has an event for every change of a file. Once the transaction commits, the
project's id is published on one Redis channel. A process that keeps rows of projects in
memory (a delivery server's resolution rows, delivery/remembered.py) listens on it through a
``ChangeListener`` and forgets a project's rows as soon as it hears the project named.

Redis pub/sub delivers a message to every subscriber connected when it is published. A
listener that loses its connection cannot know what it missed, so it says so (``on_reset``):
its owner forgets everything it kept, and keeps nothing until the listener is subscribed
again. A publish that fails is logged; its listeners' rows then live out their own short
lifetime, which their owner bounds for exactly this.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
import weakref
from collections.abc import Callable
from functools import lru_cache, partial
from typing import Any

import redis
from django.conf import settings
from django.db import transaction

from events.models import Event
from storage_service.redis_keys import redis_key

logger = logging.getLogger(__name__)

# How long the listener waits for a message before it checks its connection with a PING, and
# the longest it waits before subscribing again after losing Redis.
HEARTBEAT_SECONDS = 5.0
RECONNECT_SECONDS = 1.0
# How often the thread looks for messages when none came: a request that uses what its
# owner kept catches up first (``catch_up``), so this only bounds how long an idle process
# holds rows it should have forgotten, and how soon the thread stops when asked.
POLL_SECONDS = 0.05


# Names this process in what it publishes (pids repeat across hosts and restarts).
_ORIGIN = secrets.token_hex(8)


# Events that change nothing a kept row holds: a new file or upload is pending (rows of a
# pending file are never kept), a download reads, and an endpoint is not a file. Every other
# type announces its project (``announce_event_after_commit``).
_QUIET_TYPES = frozenset(
    {
        Event.Type.FILE_CREATED,
        Event.Type.UPLOAD_INITIATED,
        Event.Type.FILE_DOWNLOADED,
        Event.Type.WEBHOOK_ENDPOINT_DISABLED,
    }
)


def channel() -> str:
    return redis_key("project-changed")


def listener_name() -> str:
    return redis_key("change-listener")


@lru_cache(maxsize=1)
def _publisher() -> redis.Redis:
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=1, socket_connect_timeout=1)


def announce_after_commit(project_id: str) -> None:
    """Name the project on the channel once the caller's transaction commits (at once
    outside one); nothing when it rolls back."""
    transaction.on_commit(partial(_announce, project_id))


def announce_event_after_commit(project_id: str, type: str) -> None:
    """What recording events of ``type`` announces: their project, unless the type changes
    nothing a kept row holds."""
    if type not in _QUIET_TYPES:
        announce_after_commit(project_id)


def _announce(project_id: str) -> None:
    # This process's own listeners first, before the caller answers: a URL resolved by the
    # process that made the change is never answered from rows it kept before.
    for listener in list(_listeners):
        listener.heard(project_id)
    try:
        _publisher().publish(channel(), f"{project_id} {_ORIGIN}".encode())
    except redis.RedisError as exc:
        logger.warning("change of project %s not announced (%s)", project_id, type(exc).__name__)


_listeners: weakref.WeakSet[ChangeListener] = weakref.WeakSet()


class ChangeListener:
    """A daemon thread subscribed to the channel: ``on_change(project_id)`` for each project
    named, ``on_reset()`` whenever the subscription is lost (and once more before it is made
    again). ``listening`` is true only while subscribed: what is published then reaches it."""

    def __init__(self, on_change: Callable[[str], None], on_reset: Callable[[], None]) -> None:
        self._on_change = on_change
        self._on_reset = on_reset
        self._subscribed = threading.Event()
        self._stopping = threading.Event()
        # The subscription, while there is one; every use of it holds ``_reading`` (a PubSub
        # is not thread-safe), which is never held while waiting for the network.
        self._reading = threading.Lock()
        self._subscription: redis.client.PubSub | None = None
        self._thread = threading.Thread(target=self._run, name="change-listener", daemon=True)

    @property
    def listening(self) -> bool:
        return self._subscribed.is_set()

    def start(self) -> None:
        _listeners.add(self)
        self._thread.start()

    def heard(self, project_id: str) -> None:
        """A change this process announced: told at once, and again through Redis."""
        self._on_change(project_id)

    def stop(self) -> None:
        _listeners.discard(self)
        self._stopping.set()
        self._thread.join(timeout=HEARTBEAT_SECONDS + 1)

    def wait_until_listening(self, seconds: float) -> bool:
        return self._subscribed.wait(seconds)

    def catch_up(self) -> None:
        """Handle, on the calling thread, every message that has already reached this
        process: a change announced before a request came in is heard before the request is
        answered, not whenever this listener's thread is next scheduled. One poll of the
        socket when nothing is waiting."""
        with self._reading:
            subscription = self._subscription
            if subscription is None:
                return
            try:
                while (message := subscription.get_message(timeout=0)) is not None:
                    self._handle(message)
            except (redis.RedisError, OSError):
                # Whatever was on its way may be lost: forget, as the thread will on its own.
                self._on_reset()

    def _run(self) -> None:
        while not self._stopping.is_set():
            try:
                self._listen()
            except (redis.RedisError, OSError) as exc:
                logger.warning("change listener lost Redis (%s); resubscribing", type(exc).__name__)
            # No longer subscribed (_listen's finally): what was kept may miss a change.
            self._on_reset()
            self._stopping.wait(RECONNECT_SECONDS)

    def _listen(self) -> None:
        client = redis.Redis.from_url(
            settings.REDIS_URL,
            socket_timeout=HEARTBEAT_SECONDS,
            socket_connect_timeout=1,
            # Named, so that an operator (or a test) finds the listeners in CLIENT LIST.
            client_name=listener_name(),
        )
        subscription = client.pubsub()
        try:
            with self._reading:
                subscription.subscribe(channel())
                self._subscription = subscription
            heard_at = time.monotonic()
            while not self._stopping.is_set():
                with self._reading:
                    message = subscription.get_message(timeout=0)
                    if message is not None:
                        heard_at = time.monotonic()
                        self._handle(message)
                    elif time.monotonic() - heard_at >= HEARTBEAT_SECONDS:
                        # Quiet: make sure the connection still answers (a PING's reply
                        # arrives as a message, or the socket's timeout raises).
                        subscription.ping()
                        heard_at = time.monotonic()
                if message is None:
                    self._stopping.wait(POLL_SECONDS)
        finally:
            with self._reading:
                self._subscription = None
                self._subscribed.clear()
            subscription.close()
            client.close()

    def _handle(self, message: dict[str, Any]) -> None:
        kind = message["type"]
        if kind == "subscribe":
            # Anything kept before this moment may have missed a change.
            self._on_reset()
            self._subscribed.set()
        elif kind == "message":
            project_id, _, origin = message["data"].decode().partition(" ")
            if origin != _ORIGIN:  # this process's own were heard at once
                self._on_change(project_id)
