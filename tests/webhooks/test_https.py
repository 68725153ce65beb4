"""HTTPS receivers: the connection goes to the checked address, while SNI and certificate
verification use the URL's hostname."""

from __future__ import annotations

import datetime
import ssl
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from unittest import mock

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from django.db import transaction

from events.services import event_record
from tests.factories import Actor
from webhooks import delivery, services
from webhooks.models import Delivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db(transaction=True)


def self_signed(directory: Path) -> tuple[Path, Path]:
    """A certificate for "localhost" only (no IP address in it), and its key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost")]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


@pytest.fixture
def tls_receiver(tmp_path: Path) -> Iterator[tuple[int, Path, list[str]]]:
    cert, key = self_signed(tmp_path)
    seen_sni: list[str] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)

    def remember_sni(sock: ssl.SSLObject, name: str | None, ctx: ssl.SSLContext) -> None:
        seen_sni.append(name or "")

    context.sni_callback = remember_sni

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers["Content-Length"]))
            self.send_response(204)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], cert, seen_sni
    finally:
        server.shutdown()
        server.server_close()


def send_one(owner: Actor, url: str) -> Delivery:
    endpoint = endpoint_create(tenant=owner.tenant, url=url, events=None).endpoint
    with mock.patch.object(services, "enqueue"), transaction.atomic():
        event = event_record(tenant=owner.tenant, type="file.created", data={})
    sent = Delivery.objects.get(event=event, endpoint=endpoint)
    delivery.deliver([sent.id])
    return Delivery.objects.get(id=sent.id)


def test_https_verifies_the_urls_hostname_over_the_checked_address(
    owner: Actor, tls_receiver: tuple[int, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, cert, seen_sni = tls_receiver
    monkeypatch.setenv("SSL_CERT_FILE", str(cert))  # trust our test certificate

    row = send_one(owner, f"https://localhost:{port}/hook")

    assert (row.status, row.response_status, row.last_error) == ("DELIVERED", 204, None)
    assert seen_sni and set(seen_sni) == {"localhost"}


def test_https_refuses_an_untrusted_or_mismatched_certificate(
    owner: Actor, tls_receiver: tuple[int, Path, list[str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    port, cert, _ = tls_receiver
    untrusted = send_one(owner, f"https://localhost:{port}/untrusted")
    assert untrusted.status == "PENDING" and untrusted.response_status is None
    assert untrusted.last_error is not None and "CERTIFICATE_VERIFY_FAILED" in untrusted.last_error

    monkeypatch.setenv("SSL_CERT_FILE", str(cert))
    # Trusted certificate, but for "localhost", not for the address in the URL.
    mismatched = send_one(owner, f"https://127.0.0.1:{port}/by-address")
    assert mismatched.status == "PENDING" and mismatched.response_status is None
    assert mismatched.last_error is not None and "127.0.0.1" in mismatched.last_error
