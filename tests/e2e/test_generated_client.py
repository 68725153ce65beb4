"""A client generated from the served document by openapi-python-client (the most used
generator for Python), driving the whole lifecycle against the real stack: an API
server, SeaweedFS through the presigned URLs, a Celery worker making the variants and sending
the webhooks to a real receiver. The generated package must import, and every answer must
parse into its generated model (a shape that disagreed with the document would not)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import requests
from django.test import Client

from tests.factories import make_actor, png_bytes
from tests.webhook_receiver import Answer, Receiver, running_receiver, verify_signature

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

# Not "storage_client": that is our own client (clients/python), installed in the same
# environment and imported by its tests in the same session.
PACKAGE = "generated_storage_client"


@pytest.fixture(scope="session")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], ModuleType]]:
    """The client package, generated once per session from the document the API serves."""
    root = tmp_path_factory.mktemp("generated")
    document = root / "openapi.json"
    document.write_bytes(Client().get("/v1/openapi.json").content)
    config = root / "config.json"
    # No post-processing hooks (they would run ruff over the output): the test needs only
    # that what the generator writes is importable Python.
    config.write_text(json.dumps({"post_hooks": [], "project_name_override": PACKAGE}))
    result = subprocess.run(
        [
            str(Path(sys.executable).parent / "openapi-python-client"),
            "generate",
            "--path",
            str(document),
            "--config",
            str(config),
            "--meta",
            "none",
            "--output-path",
            str(root / PACKAGE),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    # A warning means part of the document could not be turned into code.
    assert "Warning" not in result.stdout + result.stderr, result.stdout + result.stderr
    sys.path.insert(0, str(root))
    try:
        yield lambda name: importlib.import_module(f"{PACKAGE}.{name}" if name else PACKAGE)
    finally:
        sys.path.remove(str(root))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(f"{PACKAGE}.")]:
            del sys.modules[name]


def test_every_module_of_the_generated_client_imports(
    generated: Callable[[str], ModuleType],
) -> None:
    package = generated("")
    assert package.__file__ is not None
    root = Path(package.__file__).parent
    modules = sorted(root.rglob("*.py"))
    assert len(modules) > 50
    for path in modules:
        relative = path.relative_to(root).with_suffix("")
        name = ".".join(part for part in relative.parts if part != "__init__")
        generated(name)


def ok(response: Any, status: int) -> Any:
    """The parsed answer of a ``*_detailed`` call that must have succeeded with ``status``."""
    assert response.status_code == status, (response.status_code, response.content[:2000])
    return response.parsed


def test_the_generated_client_drives_the_whole_lifecycle(
    generated: Callable[[str], ModuleType], celery_worker: subprocess.Popen, api_base: str
) -> None:
    owner = make_actor("generated-client")
    models = generated("models")
    api = {
        name: generated(f"api.{name.split('_')[0]}.{name}")
        for name in [
            "files_upload",
            "files_complete",
            "files_retrieve",
            "files_list",
            "files_partial_update",
            "files_copy",
            "files_download_url",
            "files_replace",
            "files_replace_complete",
            "files_destroy",
            "files_restore",
            "folders_list",
            "variants_transform",
            "variants_list",
            "variants_download_url",
            "uploads_create",
            "uploads_sign_parts",
            "uploads_list_parts",
            "uploads_complete",
            "uploads_destroy",
            "webhooks_create",
            "webhooks_list",
            "webhooks_retrieve",
            "webhooks_deliveries",
            "webhooks_redeliver",
            "webhooks_destroy",
            "identity_get",
        ]
    }

    def call(name: str, expect: int, **kwargs: Any) -> Any:
        return ok(api[name].sync_detailed(client=client, **kwargs), expect)

    base_url = api_base
    with running_receiver() as receiver:
        assert requests.get(f"{base_url}/v1/openapi.json", timeout=10).json() == json.loads(
            Client().get("/v1/openapi.json").content
        ), "the client must be generated from the document this server serves"
        client = generated("").AuthenticatedClient(base_url=base_url, token=owner.key.raw_key)
        me = call("identity_get", 200)
        assert me.data.project.id == owner.project.id and me.data.environment.value == "test"

        # Webhooks first, so the rest of the lifecycle's events are delivered.
        created = call(
            "webhooks_create",
            201,
            body=models.EndpointCreateRequest(url=receiver.url("/hook")),
        ).data
        webhook_id, secret = created.webhook.id, created.secret
        assert secret.startswith("whsec_")

        file_id = _upload_complete_and_read(call, models, owner.project.id)
        _patch_copy_download_replace(call, models, file_id)
        _variants(call, models, file_id)
        _folders_delete_restore(call, file_id)
        _multipart(call, models)
        _webhooks(call, models, receiver, webhook_id, secret, file_id)


def _put(upload: Any, data: bytes) -> requests.Response:
    headers = upload.headers.additional_properties
    response = requests.request(
        upload.method.value, upload.url, data=data, headers=headers, timeout=30
    )
    assert response.status_code == 200, response.text
    return response


def _upload_complete_and_read(call: Any, models: Any, project_id: str) -> str:
    data = png_bytes()
    metadata = models.UploadRequestMetadataType0.from_dict({"album": "été", "n": [1, None]})
    started = call(
        "files_upload",
        201,
        body=models.UploadRequest(
            filename="photo.png",
            content_type="image/png",
            size=len(data),
            path="albums/2026",
            metadata=metadata,
        ),
        idempotency_key="generated-client-1",
    )
    assert started.file.status.value == "pending"
    _put(started.upload, data)
    completed = call("files_complete", 200, file_id=started.file.id).data
    assert completed.status.value == "uploaded" and completed.version == 1
    got = call("files_retrieve", 200, file_id=started.file.id).data
    assert got.metadata.additional_properties == {"album": "été", "n": [1, None]}
    assert got.checksum == completed.checksum
    listed = call("files_list", 200, path="albums/2026", limit=10)
    assert [f.id for f in listed.data] == [started.file.id]
    assert listed.pagination.has_more is False and listed.pagination.next_cursor is None
    return str(started.file.id)


def _patch_copy_download_replace(call: Any, models: Any, file_id: str) -> None:
    renamed = call(
        "files_partial_update", 200, file_id=file_id, body=models.UpdateRequest(filename="p.png")
    )
    assert renamed.filename == "p.png"
    copy = call("files_copy", 201, file_id=file_id, body=models.CopyRequest(path="copies"))
    assert copy.path == "copies" and copy.checksum == renamed.checksum
    download = call(
        "files_download_url",
        200,
        file_id=file_id,
        body=models.DownloadUrlRequest(expires_in_seconds=120),
    )
    assert requests.get(download.url, timeout=30).content == png_bytes()

    v2 = png_bytes() + b"\x00"  # still a PNG to the sniffer (trailing bytes are ignored)
    replace = call(
        "files_replace",
        200,
        file_id=file_id,
        body=models.ReplaceRequest(content_type="image/png", size=len(v2)),
    )
    _put(replace.upload, v2)
    replaced = call("files_replace_complete", 200, file_id=file_id)
    assert replaced.version == 2


def _variants(call: Any, models: Any, file_id: str) -> None:
    variant = call(
        "variants_transform",
        202,
        file_id=file_id,
        body=models.TransformRequestWithWidth(
            width=4, format_=models.TransformRequestWithWidthFormat.PNG
        ),
    ).data
    deadline = time.monotonic() + 60
    while True:
        listed = call("variants_list", 200, file_id=file_id)
        states = {v.id: v.status.value for v in listed.data}
        if states.get(variant.id) == "ready":
            break
        assert states.get(variant.id) in {"pending", "processing"}, states
        assert time.monotonic() < deadline, states
        time.sleep(0.3)
    download = call(
        "variants_download_url",
        200,
        file_id=file_id,
        variant_id=variant.id,
        body=models.DownloadUrlRequest(),
    )
    fetched = requests.get(download.url, timeout=30)
    assert fetched.status_code == 200 and fetched.content.startswith(b"\x89PNG")


def _folders_delete_restore(call: Any, file_id: str) -> None:
    folders = call("folders_list", 200)
    assert sorted(f.path for f in folders.data) == ["albums", "copies"]
    deleted = call("files_destroy", 200, file_id=file_id).data
    assert deleted.id == file_id and deleted.deleted is True
    trash = call("files_list", 200, status=_status("deleted")).data
    assert [f.id for f in trash] == [file_id]
    restored = call("files_restore", 200, file_id=file_id)
    assert restored.status.value == "uploaded"


def _status(value: str) -> Any:
    return importlib.import_module(f"{PACKAGE}.models").FilesListStatus(value)


def _multipart(call: Any, models: Any) -> None:
    data = b"multipart through a generated client"
    started = call(
        "uploads_create",
        201,
        body=models.MultipartStartRequest(
            filename="big.bin", content_type="application/octet-stream", size=len(data)
        ),
    ).data
    upload_id = started.upload.id
    assert started.upload.part_count == 1
    fresh = call(
        "uploads_sign_parts",
        200,
        upload_id=upload_id,
        body=models.SignPartsRequest(part_numbers=[1]),
    ).data
    put = requests.put(fresh.parts[0].url, data=data, timeout=30)
    assert put.status_code == 200, put.text
    held = call("uploads_list_parts", 200, upload_id=upload_id).data
    assert [(p.part_number, p.size) for p in held.parts] == [(1, len(data))]
    completed = call(
        "uploads_complete",
        200,
        upload_id=upload_id,
        body=models.CompleteRequest(
            parts=[models.CompleteRequestPartsItem(part_number=1, etag=put.headers["ETag"])]
        ),
    )
    assert completed.id == started.file.id and completed.status.value == "uploaded"

    second = call(
        "uploads_create",
        201,
        body=models.MultipartStartRequest(
            filename="gone.bin", content_type="application/octet-stream", size=5
        ),
    ).data
    aborted = call("uploads_destroy", 200, upload_id=second.upload.id).data
    assert aborted.id == second.upload.id and aborted.aborted is True


def _webhooks(
    call: Any, models: Any, receiver: Receiver, webhook_id: str, secret: str, file_id: str
) -> None:
    listed = call("webhooks_list", 200).data
    assert [w.id for w in listed] == [webhook_id]
    got = call("webhooks_retrieve", 200, webhook_id=webhook_id).data
    assert got.status.value == "ACTIVE" and "secret" not in got.to_dict()
    arrived = receiver.wait_for("/hook", 3, timeout=30)
    for request in arrived:
        assert verify_signature(secret, request.headers["SERVICE-Signature"], request.body)
    deliveries = call("webhooks_deliveries", 200, webhook_id=webhook_id, limit=100).data
    assert {d.event.type_.value for d in deliveries} >= {"file.created", "file.uploaded"}
    delivered = next(d for d in deliveries if d.status.value == "DELIVERED")
    assert delivered.response_status == 200
    refused = call("webhooks_redeliver", 409, webhook_id=webhook_id, delivery_id=delivered.id)
    assert refused.error.code == "DELIVERY_ALREADY_DELIVERED"

    # An endpoint that keeps failing: its delivery is PENDING (retrying) or FAILED, and
    # either is sent again at once.
    receiver.script("/failing", *[Answer(status=500)] * 20)
    failing = call(
        "webhooks_create",
        201,
        body=models.EndpointCreateRequest(
            url=receiver.url("/failing"),
            events=[models.EndpointCreateRequestEventsItem("file.renamed")],
        ),
    ).data.webhook
    call("files_partial_update", 200, file_id=file_id, body=models.UpdateRequest(filename="q.png"))
    receiver.wait_for("/failing", 1, timeout=30)
    pending = call("webhooks_deliveries", 200, webhook_id=failing.id).data
    assert [d.event.type_.value for d in pending] == ["file.renamed"]
    again = call("webhooks_redeliver", 202, webhook_id=failing.id, delivery_id=pending[0].id)
    assert again.data.id == pending[0].id and again.data.status.value in {"PENDING", "FAILED"}

    for endpoint in (webhook_id, failing.id):
        deleted = call("webhooks_destroy", 200, webhook_id=endpoint).data
        assert deleted.id == endpoint and deleted.deleted is True
    assert call("webhooks_list", 200).data == []
