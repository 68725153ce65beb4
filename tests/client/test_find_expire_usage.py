"""Finding files, expiry and usage through the Python client and the `storage` command,
against a real server and store."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from storage_client import Client, ValidationError

from accounts.limits import limits_set
from tests.client.test_cli import Cli
from tests.factories import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]


def test_metadata_and_recursive_listing(client: Client) -> None:
    def put(name: str, path: str | None, metadata: dict[str, object]) -> str:
        return client.files.upload(io.BytesIO(b"x"), filename=name, path=path, metadata=metadata).id

    top = put("a.txt", "a", {"year": 2026, "draft": True})
    deep = put("b.txt", "a/b/c", {"year": "2026", "draft": True})
    put("c.txt", "ab", {"year": 2026, "draft": True})
    put("d.txt", "a/b", {"year": 2025})

    assert {f.id for f in client.files.list(metadata={"year": 2026}, path="a", recursive=True)} == {
        top,
        deep,
    }
    assert {f.id for f in client.files.list(metadata={"year": "2026", "draft": True})} >= {
        top,
        deep,
    }
    assert [f.id for f in client.files.list(path="a")] == [top]
    with pytest.raises(ValidationError):
        list(client.files.list(metadata={f"k{n}": "v" for n in range(11)}))


def test_expires_at_on_upload_and_update(client: Client) -> None:
    when = datetime.now(UTC) + timedelta(days=3)
    file = client.files.upload(io.BytesIO(b"bye"), filename="soon.txt", expires_at=when)

    assert file.expires_at is not None
    assert abs((file.expires_at - when).total_seconds()) < 0.001
    later = client.files.update(file.id, expires_at="2030-01-01T00:00:00Z")
    assert later.expires_at == datetime(2030, 1, 1, tzinfo=UTC)
    assert client.files.update(file.id, expires_at=None).expires_at is None
    with pytest.raises(ValidationError):
        client.files.update(file.id, expires_at=datetime.now(UTC) - timedelta(days=1))
    with pytest.raises(ValueError):
        client.files.update(file.id, expires_at=datetime(2030, 1, 1))  # naive: refused


def test_usage(client: Client, actor: Actor) -> None:
    client.files.upload(io.BytesIO(b"x" * 1000), filename="k.bin")
    limits_set(project=actor.project, mode="test", changes={"max_storage_bytes": 5000})

    usage = client.usage()

    assert (usage.storage_bytes, usage.files) == (1000, 1)
    assert usage.bandwidth_month == datetime.now(UTC).strftime("%Y-%m")
    assert usage.limits.max_storage_bytes == 5000
    assert usage.limits.allowed_content_types is None


def test_cli_ls_meta_recursive_and_usage(actor: Actor, api_base: str, tmp_path: Path) -> None:
    cli = Cli(actor, api_base, tmp_path)
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.txt").write_text("beta\n")
    first = cli.json("upload", "a.txt", "--path", "docs/2026", "--metadata", "team=ops")[0]
    cli.json("upload", "b.txt", "--path", "docs", "--metadata", "team=web")

    listed = cli.json("ls", "docs", "-r", "--meta", "team=ops")
    assert [f["id"] for f in listed["files"]] == [first["id"]]
    assert len(cli.json("ls", "docs", "--recursive")["files"]) == 2
    bad = cli.run("ls", "--meta", "team")
    assert bad.returncode != 0 and "--meta takes key=value" in bad.stderr

    usage = cli.json("usage")
    assert usage["storage"] == {"bytes": 11, "files": 2}
    human = cli.run("usage")
    assert human.returncode == 0 and "max storage:" in human.stdout and "no limit" in human.stdout
