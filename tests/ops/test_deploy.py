"""deploy/: the one API server command every start shares, and the untested Procfile and systemd
units kept equal, token by token, to the command lines `make cluster` runs (and the drill
kills)."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import requests

from scripts import devcluster, devservices
from tests.servers import ROOT

DEPLOY = ROOT / "deploy"
SYSTEMD = DEPLOY / "systemd"
# Values that differ by design between a laptop and production: addresses, ports, paths,
# counts, node names. Only the value is masked; the flag itself must be there on both sides.
VARIABLE_OPTIONS = {"--bind", "--concurrency", "--schedule", "-n"}
VARIABLE_WEED_FLAGS = {
    "-ip", "-ip.bind", "-port", "-port.grpc", "-mdir", "-dir", "-master", "-defaultStoreDir",
    "-s3.port", "-s3.port.grpc", "-s3.config", "-volumeSizeLimitMB",
}  # fmt: skip


# A variable a Procfile line sets for its command, as a shell reads ``NAME=value command``.
ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=")


def normalize(argv: list[str]) -> list[str]:
    """The program's name, not its path; files inside the checkout relative to it; masked
    values for VARIABLE_OPTIONS and VARIABLE_WEED_FLAGS."""
    out = [Path(argv[0]).name]
    masked_next = False
    for token in argv[1:]:
        if masked_next:
            out.append("<value>")
            masked_next = False
            continue
        flag, equals, _ = token.partition("=")
        if equals and flag in VARIABLE_WEED_FLAGS:
            out.append(f"{flag}=<value>")
            continue
        for prefix in (str(ROOT) + "/", "/opt/storage/"):
            token = token.removeprefix(prefix)
        out.append(token)
        masked_next = token in VARIABLE_OPTIONS
    return out


def cluster_commands() -> dict[str, list[str]]:
    """`make cluster`'s processes by name, as strings (no process is started)."""
    s3_config = devcluster.CLUSTER_DIR / "s3.json"
    commands = devcluster.seaweedfs_commands(8333, s3_config) + devcluster.app_commands(8000, 2)
    return {name: [str(part) for part in cmd] for name, cmd in commands}


def unit_environment(unit: str) -> dict[str, str]:
    lines = (SYSTEMD / unit).read_text().splitlines()
    pairs = [line.removeprefix("Environment=") for line in lines if line.startswith("Environment=")]
    return dict(pair.split("=", 1) for pair in pairs)


def exec_start(unit: str) -> list[str]:
    lines = (SYSTEMD / unit).read_text().splitlines()
    [command] = [line.removeprefix("ExecStart=") for line in lines if line.startswith("ExecStart=")]
    # systemd's %% is a literal %, as celery's %h wants.
    return shlex.split(command.replace("%%", "%"))


def procfile() -> tuple[dict[str, list[str]], dict[str, dict[str, str]]]:
    """Each entry's command, and the variables its line sets before it (``NAME=value cmd``)."""
    entries: dict[str, list[str]] = {}
    environments: dict[str, dict[str, str]] = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, command = line.partition(":")
            tokens = shlex.split(command)
            assignments = list(itertools.takewhile(ASSIGNMENT.match, tokens))
            environments[name] = dict(t.split("=", 1) for t in assignments)
            entries[name] = tokens[len(assignments) :]
    return entries, environments


def test_untested_files_say_so_in_their_first_line() -> None:
    files = [ROOT / "Procfile", *sorted(SYSTEMD.iterdir())]
    assert len(files) > 8
    for path in files:
        assert path.read_text().splitlines()[0].startswith("# UNTESTED"), path


def test_procfile_runs_what_make_cluster_runs() -> None:
    cluster = cluster_commands()
    entries, environments = procfile()
    # The webhook worker's additions to the environment (a connection pool), as make cluster's.
    added = devservices.webhook_worker_environment()
    assert sorted(environments["webhook_worker"]) == sorted(added)
    assert all(not environments[name] for name in environments if name != "webhook_worker")
    assert sorted(entries) == ["api", "beat", "delivery", "webhook_worker", "worker"]
    assert normalize(entries["api"]) == normalize(cluster["api1"]) == normalize(cluster["api2"])
    assert normalize(entries["delivery"]) == normalize(cluster["delivery"])
    assert normalize(entries["worker"]) == normalize(cluster["worker1"])
    assert normalize(entries["webhook_worker"]) == normalize(cluster["webhook_worker"])
    assert normalize(entries["beat"]) == normalize(cluster["beat"])


def test_systemd_units_run_what_make_cluster_runs() -> None:
    cluster = cluster_commands()
    pairs = {
        "storage-api@.service": "api1",
        "storage-delivery@.service": "delivery",
        "storage-worker@.service": "worker1",
        "storage-webhook-worker.service": "webhook_worker",
        "storage-beat.service": "beat",
        "seaweedfs-master.service": "master",
        "seaweedfs-volume@.service": "volume1",
        "seaweedfs-filer.service": "filer",
    }
    for unit, name in pairs.items():
        assert normalize(exec_start(unit)) == normalize(cluster[name]), unit
    added = devservices.webhook_worker_environment()
    assert sorted(unit_environment("storage-webhook-worker.service")) == sorted(added)
    # Every unit the target pulls in exists, and the target runs what `make cluster` runs.
    target = (SYSTEMD / "storage.target").read_text()
    wanted = [
        w for line in target.splitlines() if line.startswith("Wants=") for w in line[6:].split()
    ]
    ours = [w for w in wanted if not w.startswith(("postgresql", "redis"))]
    for unit in ours:
        template = unit.split("@")[0] + "@.service" if "@" in unit else unit
        assert (SYSTEMD / template).exists(), unit
    roles = [unit.split("@")[0].removesuffix(".service") for unit in ours]
    made = [name.rstrip("0123456789") for name in cluster]
    renamed = {"webhook_worker": "storage-webhook-worker", "api": "storage-api",
               "delivery": "storage-delivery",
               "worker": "storage-worker", "beat": "storage-beat", "master": "seaweedfs-master",
               "volume": "seaweedfs-volume", "filer": "seaweedfs-filer"}  # fmt: skip
    assert sorted(roles) == sorted(renamed[name] for name in made)


def test_every_api_start_is_the_serving_module() -> None:
    """`make run`, `make cluster`, the benches and the suite start the API one way, so its
    settings are storage_service/serving.py's wherever it runs."""
    serving = ["-m", "storage_service.serving", "--bind"]
    assert [str(p) for p in devservices.api_command(8000)[1:4]] == serving
    assert cluster_commands()["api1"][1:4] == serving
    bench_server = (ROOT / "bench" / "_server.py").read_text()
    assert "from scripts.devservices import api_command" in bench_server
    servers = (ROOT / "tests" / "servers.py").read_text()
    assert '"storage_service.serving",' in servers


def test_a_long_query_reaches_the_application(api_base: str) -> None:
    """A list query of ~24 KiB, which the API documents as valid, reaches the application
    (401 JSON without a key), not the server's own refusal of a long request line."""
    folder = "/".join(["\U0001f600" * 100] * 10)  # 1,009 characters, 12 bytes each encoded
    params = {"path": folder, "search": "\U0001f600" * 255, "contentType": "\U0001f600" * 255}
    response = requests.get(
        f"{api_base}/v1/files", params={**params, "cursor": "x" * 2000}, timeout=10
    )
    assert len(response.request.url or "") > 20_000
    assert response.status_code == 401
    assert response.json()["error"]["code"] == "UNAUTHENTICATED"
