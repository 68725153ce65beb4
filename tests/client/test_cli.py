"""The `storage` command, run as a user runs it: a subprocess, with the key in the
environment or on the command line."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.factories import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.django_db(transaction=True)]

STORAGE = str(Path(sys.executable).parent / "storage")


class Cli:
    def __init__(self, actor: Actor, base_url: str, cwd: Path) -> None:
        self.env = {
            **os.environ,
            "STORAGE_API_KEY": actor.key.raw_key,
            "STORAGE_BASE_URL": base_url,
        }
        self.cwd = cwd

    def run(
        self, *args: str, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [STORAGE, *args],
            cwd=self.cwd,
            env=env or self.env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


@pytest.fixture
def cli(actor: Actor, api_base: str, tmp_path: Path) -> Cli:
    return Cli(actor, api_base, tmp_path)


def test_upload_ls_get_rm_restore_with_json(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n")
    (tmp_path / "b.csv").write_text("x,y\n1,2\n")

    uploaded = cli.json("upload", "a.txt", "b.csv", "--path", "docs", "--metadata", "team=ops")

    assert [f["filename"] for f in uploaded] == ["a.txt", "b.csv"]
    assert {f["status"] for f in uploaded} == {"uploaded"}
    assert uploaded[1]["contentType"] == "text/csv"
    assert uploaded[0]["metadata"] == {"team": "ops"} and uploaded[0]["path"] == "docs"
    a_id, b_id = uploaded[0]["id"], uploaded[1]["id"]

    root = cli.json("ls")
    assert root == {"folders": [{**root["folders"][0], "path": "docs"}], "files": []}
    listed = cli.json("ls", "docs")
    assert {f["id"] for f in listed["files"]} == {a_id, b_id}
    assert [f["id"] for f in cli.json("ls", "--search", "b.c")["files"]] == [b_id]

    got = cli.json("get", a_id, "copy-of-a.txt")
    assert got == {"id": a_id, "path": "copy-of-a.txt", "size": 6}
    assert (tmp_path / "copy-of-a.txt").read_text() == "alpha\n"

    assert cli.json("rm", a_id) == {"id": a_id, "deleted": True}
    assert [f["id"] for f in cli.json("ls", "--deleted")["files"]] == [a_id]
    restored = cli.json("restore", a_id)
    assert (restored["id"], restored["status"]) == (a_id, "uploaded")

    assert cli.json("info", b_id)["size"] == 8
    moved = cli.json("mv", b_id, "archive/renamed.csv")
    assert (moved["path"], moved["filename"]) == ("archive", "renamed.csv")
    assert cli.json("mv", b_id, "/")["path"] is None
    assert cli.json("mv", b_id, "final.csv")["filename"] == "final.csv"
    copy = cli.json("cp", b_id, "--path", "copies")
    assert copy["path"] == "copies" and copy["id"] != b_id
    url = cli.json("url", b_id, "--expires", "120")["url"]
    assert url.startswith("http")


def test_human_output_and_one_line_errors(cli: Cli, tmp_path: Path) -> None:
    (tmp_path / "hello.txt").write_text("hello\n")
    done = cli.run("upload", "hello.txt")
    assert done.returncode == 0, done.stderr
    file_id = done.stdout.split()[0]
    assert file_id.startswith("file_") and done.stdout.rstrip().endswith("hello.txt")

    info = cli.run("info", file_id)
    assert "content type: text/plain" in info.stdout

    missing = cli.run("info", "file_00000000000000000000000000")
    assert missing.returncode == 1 and missing.stdout == ""
    assert missing.stderr.count("\n") == 1
    assert missing.stderr.startswith("storage: error: FILE_NOT_FOUND")

    no_file = cli.run("upload", "nope.bin", "--json")
    assert no_file.returncode == 1 and "nope.bin" in no_file.stderr
    assert json.loads(no_file.stdout) == []

    usage = cli.run("thumb", file_id)  # --width is required
    assert usage.returncode == 1 and usage.stderr.count("\n") == 1

    env = {k: v for k, v in cli.env.items() if k != "STORAGE_API_KEY"}
    no_key = cli.run("ls", env=env)
    assert no_key.returncode == 1 and "STORAGE_API_KEY" in no_key.stderr
    flags = cli.run("ls", "--json", "--api-key", cli.env["STORAGE_API_KEY"], env=env)
    assert flags.returncode == 0 and json.loads(flags.stdout)["files"][0]["id"] == file_id

    wrong = cli.run("--api-key", "sk_test_wrong", "ls")
    assert wrong.returncode == 1 and "UNAUTHENTICATED" in wrong.stderr


def test_webhooks_subcommands(cli: Cli) -> None:
    added = cli.json("webhooks", "add", "http://127.0.0.1:9/hook", "--events", "file.uploaded")
    webhook_id = added["webhook"]["id"]
    assert added["secret"].startswith("whsec_")
    assert added["webhook"]["events"] == ["file.uploaded"]
    assert [w["id"] for w in cli.json("webhooks", "ls")] == [webhook_id]
    assert cli.json("webhooks", "rm", webhook_id) == {"id": webhook_id, "deleted": True}
    assert cli.json("webhooks", "ls") == []
    bad = cli.run("webhooks", "add", "ftp://example.com/x")
    assert bad.returncode == 1 and "VALIDATION_ERROR" in bad.stderr


def test_a_large_upload_and_its_resume_from_the_cli(cli: Cli, tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(33 * 1024 * 1024))  # above the 32 MiB threshold: parts
    [file] = cli.json("upload", "big.bin")
    assert (file["size"], file["status"]) == (33 * 1024 * 1024, "uploaded")
    assert cli.json("get", file["id"], "back.bin")["size"] == 33 * 1024 * 1024
    assert (tmp_path / "back.bin").read_bytes() == big.read_bytes()
    missing = cli.run("resume", "upload_00000000000000000000000000", "big.bin")
    assert missing.returncode == 1 and "UPLOAD_NOT_FOUND" in missing.stderr


def test_events_and_webhook_rotate_and_replay_subcommands(cli: Cli) -> None:
    cli.json("upload", *_one_file(cli))
    listed = cli.json("events", "--limit", "5")
    assert [e["type"] for e in listed][:2] == ["file.uploaded", "file.created"]
    only = cli.json("events", "--type", "file.created")
    assert [e["type"] for e in only] == ["file.created"]
    shown = cli.json("events", listed[0]["id"])
    assert shown == listed[0]
    human = cli.run("events")
    assert human.returncode == 0 and listed[0]["id"] in human.stdout

    webhook_id = cli.json("webhooks", "add", "http://127.0.0.1:9/hook")["webhook"]["id"]
    rotated = cli.json("webhooks", "rotate", webhook_id, "--overlap", "600")
    assert rotated["secret"].startswith("whsec_")
    assert rotated["webhook"]["previousSecretExpiresAt"] is not None
    text = cli.run("webhooks", "rotate", webhook_id, "--overlap", "0")
    assert text.returncode == 0 and "shown once" in text.stdout
    bad = cli.run("webhooks", "rotate", webhook_id, "--overlap", "604801")
    assert bad.returncode == 1 and "VALIDATION_ERROR" in bad.stderr

    replayed = cli.json("webhooks", "replay", webhook_id, "--since", listed[-1]["created_at"])
    assert replayed == {"deliveries": len(listed)}
    missing = cli.run("events", "evt_00000000000000000000000000")
    assert missing.returncode == 1 and "EVENT_NOT_FOUND" in missing.stderr


def _one_file(cli: Cli) -> list[str]:
    path = cli.cwd / "note.txt"
    path.write_bytes(b"an event or two")
    return [str(path)]
