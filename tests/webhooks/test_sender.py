"""The HTTP side of an attempt, against raw sockets: the connection goes to the address that
was checked, keep-alive connections are reused (and replaced when the receiver closed them),
an answer larger than the sender reads is cut off, without costing the delivery, and a
hostile answer (malformed, flooding or endless) is a failed attempt within the timeout."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from unittest import mock

import pytest
from django.db import transaction

from events.services import event_record
from tests.factories import Actor
from webhooks import delivery, network, services
from webhooks.models import Delivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"


def read_request(conn: socket.socket) -> bytes:
    """One request (headers and a Content-Length body), or b"" when the client closed."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return b""
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += conn.recv(65536)
    return head


@contextmanager
def raw_server(handle: Callable[[socket.socket], None]) -> Iterator[tuple[int, list[Any]]]:
    """Each accepted connection handled on its own thread; yields the port and the list of
    accepted connections' peer addresses."""
    listener = socket.create_server(("127.0.0.1", 0))
    accepted: list[Any] = []

    def serve() -> None:
        while True:
            try:
                conn, peer = listener.accept()
            except OSError:
                return
            accepted.append(peer)
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield listener.getsockname()[1], accepted
    finally:
        listener.close()


def send_one(owner: Actor, url: str) -> Delivery:
    endpoint = endpoint_create(tenant=owner.tenant, url=url, events=None).endpoint
    with mock.patch.object(services, "enqueue"), transaction.atomic():
        event = event_record(tenant=owner.tenant, type="file.created", data={})
    sent = Delivery.objects.get(event=event, endpoint=endpoint)
    delivery.deliver([sent.id])
    return Delivery.objects.get(id=sent.id)


def test_the_request_goes_to_the_checked_address_never_to_a_second_lookup(
    owner: Actor,
) -> None:
    """DNS rebinding: the name answers a first time, then would answer elsewhere. The sender
    connects to the first answer (the one that was checked), and sends the name as Host."""
    heads: list[bytes] = []

    def answer(conn: socket.socket) -> None:
        with conn:
            heads.append(read_request(conn))
            conn.sendall(OK)

    real_getaddrinfo = socket.getaddrinfo
    asked: list[str] = []

    def rebinding(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "rebind.test":
            asked.append(host)
            address = "127.0.0.1" if len(asked) == 1 else "192.0.2.1"
            return real_getaddrinfo(address, port, *args, **kwargs)
        return real_getaddrinfo(host, port, *args, **kwargs)

    with (
        raw_server(answer) as (port, _),
        mock.patch.object(network.socket, "getaddrinfo", rebinding),
    ):
        row = send_one(owner, f"http://rebind.test:{port}/hook")

    assert (row.status, row.response_status) == ("DELIVERED", 200)
    assert asked == ["rebind.test"]
    assert f"\r\nHost: rebind.test:{port}\r\n".encode() in heads[0] + b"\r\n"


def test_a_keep_alive_connection_carries_the_next_delivery(owner: Actor) -> None:
    def answer_all(conn: socket.socket) -> None:
        with conn:
            while read_request(conn):
                conn.sendall(OK)

    with raw_server(answer_all) as (port, accepted):
        first = send_one(owner, f"http://127.0.0.1:{port}/a")
        second = send_one(owner, f"http://127.0.0.1:{port}/b")

    assert (first.status, second.status) == ("DELIVERED", "DELIVERED")
    assert len(accepted) == 1


def test_a_connection_the_receiver_closed_is_replaced_not_a_failure(owner: Actor) -> None:
    """The receiver answers once per connection and hangs up (without saying so): the next
    delivery opens a new connection instead of failing on the closed one."""

    def answer_once(conn: socket.socket) -> None:
        with conn:
            read_request(conn)
            conn.sendall(OK)

    with raw_server(answer_once) as (port, accepted):
        first = send_one(owner, f"http://127.0.0.1:{port}/a")
        time.sleep(0.1)  # the receiver's close has arrived
        second = send_one(owner, f"http://127.0.0.1:{port}/b")

    assert (first.status, second.status) == ("DELIVERED", "DELIVERED")
    assert second.last_error is None
    assert len(accepted) == 2


def test_an_answer_larger_than_the_sender_reads_is_cut_off(owner: Actor) -> None:
    """A 2xx is a success whatever follows it; the sender reads 64 KiB of the body at most,
    then closes the connection (the receiver's writes fail) rather than read 256 MiB."""
    failed = threading.Event()

    def flood(conn: socket.socket) -> None:
        with conn:
            read_request(conn)
            size = 256 * 1024 * 1024
            try:
                conn.sendall(f"HTTP/1.1 200 OK\r\nContent-Length: {size}\r\n\r\n".encode())
                block = b"x" * (1024 * 1024)
                for _ in range(size // len(block)):
                    conn.sendall(block)
            except OSError:
                failed.set()

    with raw_server(flood) as (port, _):
        started = time.monotonic()
        row = send_one(owner, f"http://127.0.0.1:{port}/big")
        assert failed.wait(timeout=10)

    assert (row.status, row.response_status, row.last_error) == ("DELIVERED", 200, None)
    assert time.monotonic() - started < 10


def answer_with(raw: bytes, *, forever: bytes = b"") -> Callable[[socket.socket], None]:
    """A receiver that reads the request, sends ``raw``, then ``forever`` until the sender
    hangs up."""

    def handle(conn: socket.socket) -> None:
        with conn:
            read_request(conn)
            try:
                conn.sendall(raw)
                while forever:
                    conn.sendall(forever)
                    time.sleep(0.01)
            except OSError:
                pass

    return handle


def test_a_malformed_answer_is_stored_as_printable_text_beside_the_batchs_other_outcomes(
    owner: Actor,
) -> None:
    """A status line of NUL and control bytes is a failed read; the row keeps it escaped (a NUL
    cannot even be stored in PostgreSQL's text), and the event's other delivery, in the same
    batch, is recorded as delivered."""
    with (
        raw_server(answer_with(b"\x00\x1b[2J garbage\r\n\r\n")) as (bad_port, _),
        raw_server(answer_with(OK)) as (good_port, _),
    ):
        bad = endpoint_create(
            tenant=owner.tenant, url=f"http://127.0.0.1:{bad_port}/x", events=None
        )
        good = endpoint_create(
            tenant=owner.tenant, url=f"http://127.0.0.1:{good_port}/y", events=None
        )
        with mock.patch.object(services, "enqueue"), transaction.atomic():
            event = event_record(tenant=owner.tenant, type="file.created", data={})
        delivery.deliver(Delivery.objects.filter(event=event).values_list("id", flat=True))

    failed = Delivery.objects.get(event=event, endpoint=bad.endpoint)
    assert (failed.status, failed.attempts, failed.response_status) == ("PENDING", 1, None)
    assert failed.last_error == r"Read failed: \x00\x1b[2J garbage\r\n"
    delivered = Delivery.objects.get(event=event, endpoint=good.endpoint)
    assert (delivered.status, delivered.response_status) == ("DELIVERED", 200)
    shown = owner.get(f"/v1/webhooks/{bad.endpoint.id}/deliveries").json()["data"][0]
    assert shown["lastError"] == failed.last_error


@pytest.mark.parametrize(
    ("answer", "forever", "error"),
    [
        (
            b"HTTP/1.1 200 OK\r\n" + b"X-A: b\r\n" * 1000,
            b"",
            "Read failed: got more than 100 headers",
        ),
        (b"HTTP/1.1 200 " + b"x" * 70_000 + b"\r\n\r\n", b"", "Read failed: got more than 65536"),
        (b"", b"HTTP/1.1 100 Continue\r\n\r\n", "Timed out after 1 s."),
        (b"HTTP/1.1 200 OK\r\n", b"X-Slow: header\r\n", "Timed out after 1 s."),
    ],
    ids=["header-flood", "endless-status-line", "endless-100-continue", "endless-headers"],
)
def test_a_hostile_answer_is_a_failed_attempt_within_the_timeout(
    owner: Actor, answer: bytes, forever: bytes, error: str, settings: Any
) -> None:
    settings.SERVICE_WEBHOOK_TIMEOUT_SECONDS = 1
    with raw_server(answer_with(answer, forever=forever)) as (port, _):
        started = time.monotonic()
        row = send_one(owner, f"http://127.0.0.1:{port}/hostile")
        took = time.monotonic() - started
    assert (row.status, row.attempts, row.response_status) == ("PENDING", 1, None)
    assert row.last_error is not None and row.last_error.startswith(error)
    assert took < 2.5
