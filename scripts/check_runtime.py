"""Check that a production install (requirements.lock, then the project with --no-deps) is
exactly what the service runs on: nothing from development, nothing missing.

Run by `make check-runtime` with the Python of a virtualenv that holds only the runtime lock
and the project (never the dev lock), from outside the checkout so that only installed code
is found:

1. The installed distributions are exactly the lock's pins, and exactly the closure of the
   project's runtime requirements (its dev extra left out): the lock holds no development
   package and lacks none the service needs.
2. Every module of the service (every app, migrations, admin, tasks, commands, settings)
   imports under the production profile, and so do the processes a deployment starts
   (the API server, the Celery worker).
   The object store's storage (STORAGES["files"], django-storages) is built there too.
3. ``django-admin check --deploy --fail-level WARNING`` passes under the production profile.

Only the standard library and what the runtime lock installs are used here.
"""

from __future__ import annotations

import importlib
import importlib.metadata as metadata
import os
import pkgutil
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
PROJECT = "storage-service"
# What a bare virtualenv brings, and the project itself.
NOT_PINNED = {"pip", "setuptools", "wheel", PROJECT}
# A production profile that starts: dummy secrets and host names, nothing reachable needed.
PRODUCTION_ENV = {
    "DJANGO_SETTINGS_MODULE": "storage_service.settings.production",
    "SERVICE_SECRET_KEY": "check-runtime-" + "x" * 50,
    "SERVICE_API_KEY_HASH_SECRET": "check-runtime-" + "y" * 32,
    "AWS_ACCESS_KEY_ID": "AKIAEXAMPLE",
    "AWS_SECRET_ACCESS_KEY": "example-secret",
    "SERVICE_ALLOWED_HOSTS": "files.example.com",
}


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def locked(path: Path) -> dict[str, str]:
    pins: dict[str, str] = {}
    for raw in path.read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("-"):
            raise SystemExit(f"{path.name}: the runtime lock includes nothing else ({line!r})")
        name, _, version = line.partition("==")
        pins[canonical(name)] = version
    return pins


def runtime_closure() -> set[str]:
    """Every distribution the project's runtime requirements need, transitively, with the
    extras asked for (celery[redis], psycopg[binary]); the project's own extras left out."""
    needed: dict[str, set[str]] = {}
    pending = [(Requirement(r), "") for r in metadata.distribution(PROJECT).requires or []]
    while pending:
        requirement, extra = pending.pop()
        if requirement.marker and not requirement.marker.evaluate({"extra": extra}):
            continue
        name = canonical(requirement.name)
        extras = set(requirement.extras)
        if name in needed and extras <= needed[name]:
            continue
        needed.setdefault(name, set()).update(extras)
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            raise SystemExit(f"{name} is needed at runtime but not installed") from None
        for text in dist.requires or []:
            for asked in {"", *needed[name]}:
                pending.append((Requirement(text), asked))
    return set(needed)


def check_lock() -> None:
    pins = locked(ROOT / "requirements.lock")
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    dev = {
        canonical(Requirement(r).name) for r in pyproject["project"]["optional-dependencies"]["dev"]
    }
    if leaked := sorted(dev & set(pins)):
        raise SystemExit(f"requirements.lock pins development packages: {', '.join(leaked)}")
    installed = {canonical(d.metadata["Name"]): d.version for d in metadata.distributions()}
    for name in NOT_PINNED:
        installed.pop(name, None)
    if unpinned := sorted(set(installed) - set(pins)):
        raise SystemExit(f"installed without a pin in requirements.lock: {', '.join(unpinned)}")
    if drift := sorted(n for n in pins if installed.get(n) != pins[n]):
        raise SystemExit(f"installed versions differ from requirements.lock: {', '.join(drift)}")
    closure = runtime_closure()
    if extra := sorted(set(pins) - closure):
        raise SystemExit(
            f"requirements.lock pins what the service does not need: {', '.join(extra)}"
        )
    print(f"requirements.lock: {len(pins)} pins, exactly the runtime closure, no dev package")


def service_packages() -> list[str]:
    """The service's top-level packages, as pyproject.toml has setuptools install them."""
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return [
        pattern.rstrip("*")
        for pattern in pyproject["tool"]["setuptools"]["packages"]["find"]["include"]
    ]


def check_imports() -> None:
    os.environ.update(PRODUCTION_ENV)
    import django

    django.setup()
    modules = 0
    for name in service_packages():
        package = importlib.import_module(name)
        for module in pkgutil.walk_packages(package.__path__, prefix=f"{name}."):
            if module.name.startswith("storage_service.settings."):
                continue  # the other profiles; production is the one loaded
            importlib.import_module(module.name)
            modules += 1
    # The processes a deployment starts: the API server and the Celery worker and beat.
    for entry in [
        "granian",
        "storage_service.serving",
        "celery.bin.celery",
        "storage_service.wsgi",
    ]:
        importlib.import_module(entry)
    print(f"imported {modules} modules of the service with only the runtime lock installed")
    # The object store's one storage (django-storages), built from STORAGES as a process would
    # build it, signing for its public endpoint; no network call is made.
    from storage_service import objectstore

    store = objectstore.storage()
    scope = store.signing_scope
    alias = objectstore.STORAGE_ALIAS
    print(f"STORAGES[{alias!r}]: {type(store).__name__}, URLs signed for {scope.object_url_prefix}")


def check_deploy() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "django", "check", "--deploy", "--fail-level", "WARNING"],
        env={**os.environ, **PRODUCTION_ENV},
        capture_output=True,
        text=True,
        timeout=120,
    )
    if result.returncode != 0:
        raise SystemExit(f"check --deploy failed:\n{result.stdout}{result.stderr}")
    print(result.stdout.strip() or "check --deploy: no issues")


def main() -> None:
    if Path.cwd().resolve() == ROOT or str(ROOT) in sys.path:
        raise SystemExit("run from outside the checkout: only installed code may be found")
    check_lock()
    check_imports()
    check_deploy()


if __name__ == "__main__":
    main()
