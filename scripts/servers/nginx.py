"""Debian's nginx in front of an API server and a delivery server, configured by the
deployment's own site file (deploy/nginx/storage-delivery.conf) with only its addresses and
paths changed: for the nginx test and for bench.delivery's figures as deployed."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from urllib.error import URLError
from urllib.parse import urlsplit
from urllib.request import urlopen

from scripts.processes import ROOT, ServiceError
from scripts.servers.common import free_port

SITE = ROOT / "deploy" / "nginx" / "storage-delivery.conf"
START_TIMEOUT = 10.0


def nginx_binary() -> str | None:
    """Debian's nginx (`make nginx` installs it), or None."""
    found = shutil.which("nginx")
    if found:
        return found
    return "/usr/sbin/nginx" if os.path.exists("/usr/sbin/nginx") else None


@dataclass
class Nginx:
    base_url: str
    proc: subprocess.Popen[bytes]
    directory: Path


def site_config(*, api: str, delivery: str, port: int, cache: Path) -> str:
    """The deployment's site with the addresses of ``api`` and ``delivery`` (base URLs), one
    API upstream, a listener on ``port`` and its cache under ``cache``."""
    return (
        SITE.read_text()
        .replace("/var/cache/nginx/storage-delivery", str(cache))
        .replace("127.0.0.1:8000", urlsplit(api).netloc)
        .replace("server 127.0.0.1:8001;", "")  # the second API of a deployment
        .replace("127.0.0.1:8002", urlsplit(delivery).netloc)
        .replace("listen 80;", f"listen 127.0.0.1:{port};")
    )


def main_config(directory: Path, *, workers: int) -> str:
    """nginx.conf for a server of our own: in the foreground, everything under ``directory``."""
    temp = {
        "client_body": directory / "body",
        "proxy": directory / "proxy",
        "fastcgi": directory / "fastcgi",
        "uwsgi": directory / "uwsgi",
        "scgi": directory / "scgi",
    }
    return (
        ("user root;\n" if os.geteuid() == 0 else "")
        + f"daemon off;\nworker_processes {workers};\npid {directory}/nginx.pid;\n"
        + f"error_log {directory}/error.log warn;\nevents {{}}\nhttp {{\n"
        + f"access_log {directory}/access.log;\n"
        + "".join(f"{name}_temp_path {path};\n" for name, path in temp.items())
        + f"include {directory}/site.conf;\n}}\n"
    )


@contextmanager
def nginx_in_front(
    *, api: str, delivery: str, directory: Path, workers: int = 1, access_log: bool = True
) -> Iterator[Nginx]:
    """nginx on a free port in front of ``api`` and ``delivery`` until the block ends, its
    files (configuration, cache, logs) in ``directory``."""
    binary = nginx_binary()
    if binary is None:
        raise ServiceError("nginx is not installed: `make nginx` installs Debian's")
    directory.mkdir(parents=True, exist_ok=True)
    port = free_port()
    site = site_config(api=api, delivery=delivery, port=port, cache=directory / "cache")
    (directory / "site.conf").write_text(site)
    config = main_config(directory, workers=workers)
    if not access_log:
        config = config.replace(f"access_log {directory}/access.log;", "access_log off;")
    (directory / "nginx.conf").write_text(config)
    proc = subprocess.Popen(
        [binary, "-p", str(directory), "-c", str(directory / "nginx.conf")],
        start_new_session=True,  # its workers in its process group: their CPU counted together
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_until_answering(f"{base}/healthz", proc)
        yield Nginx(base, proc, directory)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def wait_until_answering(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        try:
            with urlopen(url, timeout=2):
                return
        except URLError:
            if proc.poll() is not None:
                raise ServiceError(f"nginx exited with code {proc.returncode}") from None
            if time.monotonic() > deadline:
                raise ServiceError(f"nginx did not answer {url} in {START_TIMEOUT:.0f} s") from None
            time.sleep(0.1)
