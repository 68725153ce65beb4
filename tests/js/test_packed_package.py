"""`npm pack` of clients/js, installed alone in an empty folder, against the real stack: the
files it ships, its exports and its lack of dependencies are what an application gets. The
script (packed_script.mjs) uploads, lists, downloads and verifies a real webhook delivery,
under Node 18 and the machine's Node."""

from __future__ import annotations

import json
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from tests.factories import Actor
from tests.js.conftest import JS, ROOT, node, node18, require_built, run_node


def npm() -> str:
    found = shutil.which("npm")
    assert found is not None, "no `npm` on PATH"
    return found


# npm pack and an install into an empty folder: a toolchain run, in `make test-slow`.
@pytest.mark.slow
def test_the_packed_package_alone_uploads_lists_downloads_and_verifies(
    tmp_path: Path, api_base: str, actor: Actor, celery_worker: subprocess.Popen
) -> None:
    require_built()
    packed = subprocess.run(
        [npm(), "pack", "--json", "--pack-destination", str(tmp_path)],
        cwd=JS,
        capture_output=True,
        text=True,
        check=True,
    )
    tarball = tmp_path / json.loads(packed.stdout)[0]["filename"]
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert {"package/dist/index.js", "package/dist/index.d.ts", "package/dist/browser.js"} <= names
    assert "package/README.md" in names
    assert not any(name.startswith(("package/src/", "package/test/")) for name in names)

    app = tmp_path / "app"
    app.mkdir()
    (app / "package.json").write_text('{"name": "app", "private": true, "type": "module"}')
    # No dependency to fetch: the install needs no registry.
    subprocess.run(
        [npm(), "install", "--offline", "--no-audit", "--no-fund", str(tarball)],
        cwd=app,
        capture_output=True,
        check=True,
    )
    installed = sorted(p.name for p in (app / "node_modules").iterdir() if p.name[0] != ".")
    assert installed == ["storage-service-client"], installed
    shutil.copy(ROOT / "tests" / "js" / "packed_script.mjs", app / "script.mjs")
    # Under the oldest Node the package claims, and the machine's.
    for binary in (node18(), node()):
        run = run_node(
            ["script.mjs"],
            env={"STORAGE_API_KEY": actor.key.raw_key, "STORAGE_BASE_URL": api_base},
            timeout=120,
            cwd=app,
            binary=binary,
        )
        assert run.returncode == 0, f"{binary}:\n{run.output}"
        result = json.loads(run.output.strip().splitlines()[-1])
        assert result["fileId"].startswith("file_") and result["event"].startswith("evt_")
