"""ids, timestamps, environment readers, cursors, and no default file storage."""

from __future__ import annotations

import os
import subprocess
import sys
from datetime import UTC, datetime

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.core.files.base import ContentFile
from django.core.files.storage import InvalidStorageError, default_storage

from storage_service import env
from storage_service.errors import ValidationError
from storage_service.ids import _encode, first_id_at, looks_like_id, new_id
from storage_service.pagination import decode_cursor, encode_cursor
from storage_service.timefmt import iso


def test_ids_are_prefixed_unique_and_time_ordered() -> None:
    earlier = new_id("file", now_ms=1_700_000_000_000)
    later = new_id("file", now_ms=1_700_000_000_001)
    assert earlier.startswith("file_") and len(earlier) == 31
    assert earlier < later
    assert len({new_id("file") for _ in range(1000)}) == 1000
    assert looks_like_id(earlier, "file")
    assert not looks_like_id(earlier, "upload")
    assert not looks_like_id("file_" + "I" * 26, "file")  # not Crockford


@pytest.mark.parametrize("millis", [0, 1, 1_700_000_000_123, (1 << 48) - 1])
def test_ids_spell_time_and_randomness_as_the_crockford_encoding(
    millis: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """new_id spells its 128 bits ten at a time, through a table of pairs: the very
    characters of the plain Crockford encoding, for every bit of time and of randomness."""
    for random in [0, 1, (1 << 80) - 1, 0x5A5A5A5A5A5A5A5A5A5A, *(1 << n for n in range(80))]:
        monkeypatch.setattr("secrets.randbits", lambda bits, random=random: random)
        expected = _encode((millis & ((1 << 48) - 1)) << 80 | random, 26)
        assert new_id("dl", now_ms=millis) == f"dl_{expected}"
    assert first_id_at("dl", millis) == f"dl_{_encode(millis << 80, 26)}"


def test_timestamps_are_utc_with_milliseconds() -> None:
    assert iso(datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC)) == "2026-01-02T03:04:05.678Z"
    assert iso(None) is None


def test_env_readers_refuse_bad_values(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("X_INT", "seven")
    monkeypatch.setenv("X_BOOL", "maybe")
    monkeypatch.setenv("X_LIST", "1000,abc")
    monkeypatch.setenv("X_SMALL", "-1")
    with pytest.raises(ImproperlyConfigured):
        env.env_int("X_INT", 1)
    with pytest.raises(ImproperlyConfigured):
        env.env_bool("X_BOOL", False)
    with pytest.raises(ImproperlyConfigured):
        env.env_int_list("X_LIST", [1])
    with pytest.raises(ImproperlyConfigured):
        env.env_int("X_SMALL", 1, minimum=0)
    with pytest.raises(ImproperlyConfigured):
        env.env_secret("X_MISSING_SECRET")


def test_env_readers_parse_good_values(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("X_LIST", "1000, 5000,30000")
    monkeypatch.setenv("X_BOOL", "on")
    secret_file = tmp_path / "secret"
    secret_file.write_text("s3cr3t\n")
    monkeypatch.setenv("X_SECRET_FILE", str(secret_file))
    assert env.env_int_list("X_LIST", [1]) == [1000, 5000, 30000]
    assert env.env_bool("X_BOOL", False) is True
    assert env.env_secret("X_SECRET") == "s3cr3t"
    assert env.env_int("X_UNSET", 7) == 7


def test_cursor_round_trip_and_tamper_detection() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 123456, tzinfo=UTC)
    cursor = encode_cursor("files:createdAt:desc", moment, "file_x")
    assert decode_cursor(cursor, "files:createdAt:desc") == (moment, "file_x")
    with pytest.raises(ValidationError):
        decode_cursor(cursor, "files:size:desc")
    with pytest.raises(ValidationError):
        decode_cursor(cursor + "x", "files:createdAt:desc")


def _load_settings(module: str, **extra: str) -> subprocess.CompletedProcess[str]:
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SERVICE_"))}
    return subprocess.run(
        [sys.executable, "-c", f"import {module}"],
        env={**keep, **extra},
        capture_output=True,
        text=True,
        check=False,
    )


def test_production_settings_have_no_secret_defaults() -> None:
    result = _load_settings("storage_service.settings.production")
    assert result.returncode != 0
    assert "SERVICE_SECRET_KEY must be set" in result.stderr


def test_production_settings_load_with_their_secrets() -> None:
    result = _load_settings(
        "storage_service.settings.production",
        SERVICE_SECRET_KEY="k",
        SERVICE_API_KEY_HASH_SECRET="h",
        AWS_ACCESS_KEY_ID="a",
        AWS_SECRET_ACCESS_KEY="s",
        SERVICE_ALLOWED_HOSTS="files.example.com",
    )
    assert result.returncode == 0, result.stderr


def test_production_settings_need_no_store_keys_and_take_them_from_files(tmp_path) -> None:
    """A role's deployment sets no AWS keys: the store's options leave them to botocore's
    chain. Keys given as files are used as given, a session token with them."""
    show = (
        "from storage_service.settings import production as p;"
        "o = p.STORAGES['files']['OPTIONS'];"
        "print(o['access_key'], o['secret_key'], o['security_token'], o['session_profile'])"
    )
    secrets = {
        "SERVICE_SECRET_KEY": "k",
        "SERVICE_API_KEY_HASH_SECRET": "h",
        "SERVICE_ALLOWED_HOSTS": "files.example.com",
    }
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "SERVICE_"))}

    def options(**extra: str) -> list[str]:
        result = subprocess.run(
            [sys.executable, "-c", show],
            env={**keep, **secrets, **extra},
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        return result.stdout.split()

    # Plain AWS_* variables stay botocore's to read (with their session token, if any).
    assert options(AWS_ACCESS_KEY_ID="ASIA", AWS_SECRET_ACCESS_KEY="s") == ["None"] * 4
    for name, value in {"KEY": "AKIAFILE", "SECRET": "file-secret", "TOKEN": "file-token"}.items():
        (tmp_path / name).write_text(value + "\n")
    from_files = options(
        AWS_ACCESS_KEY_ID_FILE=str(tmp_path / "KEY"),
        AWS_SECRET_ACCESS_KEY_FILE=str(tmp_path / "SECRET"),
        AWS_SESSION_TOKEN_FILE=str(tmp_path / "TOKEN"),
    )
    assert from_files == ["AKIAFILE", "file-secret", "file-token", "None"]


def test_a_bad_setting_stops_start_up() -> None:
    result = _load_settings("storage_service.settings.dev", SERVICE_DELETE_GRACE_DAYS="soon")
    assert result.returncode != 0
    assert "SERVICE_DELETE_GRACE_DAYS must be an integer" in result.stderr


def test_nothing_can_be_stored_through_djangos_default_storage() -> None:
    """Bytes go between clients and the store by presigned URLs; no code path may write them
    to an API host's disk, which a default FileSystemStorage would do without a word."""
    with pytest.raises(InvalidStorageError):
        default_storage.save("anything.txt", ContentFile(b"x"))
