"""The issue's "done when": a fresh virtualenv of the oldest Python the client supports,
with nothing but `pip install ./clients/python`, uploads, lists, downloads and verifies a
webhook signature against a running service."""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.factories import Actor

pytestmark = [pytest.mark.e2e, pytest.mark.slow, pytest.mark.django_db(transaction=True)]

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).with_name("fresh_venv_script.py")


def python39() -> str:
    """Python 3.9: $PYTHON39, python3.9 on the PATH, or pyenv's."""
    candidates = [os.environ.get("PYTHON39", ""), shutil.which("python3.9") or ""]
    pyenv_root = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    candidates += sorted(glob.glob(f"{pyenv_root}/versions/3.9*/bin/python3.9"), reverse=True)
    for candidate in filter(None, candidates):
        probe = subprocess.run(
            [candidate, "-c", "import sys; print(sys.version_info[:2] == (3, 9))"],
            capture_output=True,
            text=True,
        )
        if probe.stdout.strip() == "True":
            return candidate
    raise AssertionError("Python 3.9 not found: install it (pyenv) or set PYTHON39")


# A venv and a pip install of the client and its dependencies: beyond the suite's 120 s per
# test on a loaded machine (the steps keep their own timeouts below).
@pytest.mark.timeout(600)
def test_a_fresh_python39_venv_with_only_the_client(
    actor: Actor, api_base: str, celery_worker: subprocess.Popen, tmp_path: Path
) -> None:
    env_dir = tmp_path / "venv"
    subprocess.run([python39(), "-m", "venv", str(env_dir)], check=True, timeout=120)
    python = env_dir / "bin" / "python"
    # Exactly the documented command, from the repository's root (pip's own cache is used).
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "./clients/python"],
        cwd=ROOT,
        check=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")},
    )
    installed = subprocess.run(
        [str(python), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {p["name"].lower() for p in json.loads(installed.stdout)}
    assert "storage-service-client" in names
    assert not names & {"django", "djangorestframework", "storage-service", "boto3"}

    done = subprocess.run(
        [str(python), str(SCRIPT)],
        cwd=tmp_path,  # not the repository: only the installed package can be imported
        env={
            "PATH": os.environ.get("PATH", ""),
            "STORAGE_API_KEY": actor.key.raw_key,
            "STORAGE_BASE_URL": api_base,
        },
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)

    # The command too, with the progress bars' package installed by the same pip install.
    listed = subprocess.run(
        [str(env_dir / "bin" / "storage"), "ls", "py39", "--json"],
        cwd=tmp_path,
        env={"STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": api_base},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert [f["id"] for f in json.loads(listed.stdout)["files"]] == [seen["fileId"]]

    assert seen["python"] == [3, 9]
    assert seen["status"] == "uploaded" and seen["listed"] == [seen["fileId"]]
    assert seen["downloadedSha256"] == seen["uploadedSha256"]
    assert (seen["eventType"], seen["eventFileId"]) == ("file.uploaded", seen["fileId"])
