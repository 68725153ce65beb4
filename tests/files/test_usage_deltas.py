"""A tenant's usage (its files_usagedelta rows, written by triggers) equals a fresh sum over
its stored objects, whatever changes them, however many transactions change them at once,
and however the fold sweep and recount_usage rewrite the rows meanwhile."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.conf import settings
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.db.models import Case, Count, F, Q, Sum, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from accounts.limits import limits_set
from accounts.tenancy import Tenant
from files.models import File, StoredObject, UsageDelta
from files.services import files_expire_pending, files_purge_expired
from files.usage import held_bytes, project_stored, usage_fold, usage_recount
from tests.factories import Actor, make_actor, pdf_bytes, upload_body
from tests.helpers import at_once, open_in_another_session, start_upload, uploaded_file
from tests.storage import put_to

State = StoredObject.State
IN_STORE = Q(state__in=[State.LIVE, State.DISCARDED], size__isnull=False)


def fresh(tenant: Tenant) -> dict[str, int]:
    """Held bytes, stored bytes, stored objects and uploaded files, summed over the rows now."""
    objects = StoredObject.objects.filter(project_id=tenant.project_id, mode=tenant.mode)
    totals = objects.aggregate(
        held=Coalesce(
            Sum(
                Case(
                    When(state=State.PENDING, then=F("declared_size")),
                    When(state__in=[State.LIVE, State.DISCARDED], then=Coalesce(F("size"), 0)),
                    default=0,
                )
            ),
            0,
        ),
        stored=Coalesce(Sum("size", filter=IN_STORE), 0),
        objects=Count("pk", filter=IN_STORE),
    )
    files = File.objects.for_tenant(tenant).filter(status=File.Status.UPLOADED).count()
    return {**totals, "files": files}


@contextlib.contextmanager
def uncommitted_object(actor: Actor, name: str, size: int) -> Iterator[None]:
    """While inside: another transaction has inserted a live object of ``size`` bytes (and so
    its delta row) and not committed. It commits on leaving."""
    with open_in_another_session(
        lambda: StoredObject.objects.create(
            **actor.tenant.owner(),
            storage_key=f"{actor.project.id}/{name}",
            state=State.LIVE,
            declared_type="text/plain",
            declared_size=size,
            size=size,
        )
    ):
        yield


@contextlib.contextmanager
def never_waiting() -> Iterator[None]:
    """A lock wait over 2 s inside raises (lock_timeout): what runs here must not wait."""
    with connection.cursor() as cursor:
        cursor.execute("SET lock_timeout = '2s'")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute("RESET lock_timeout")


def counted(tenant: Tenant) -> dict[str, int]:
    stored = project_stored(tenant=tenant)
    return {
        "held": held_bytes(tenant=tenant),
        "stored": stored.bytes,
        "objects": stored.objects,
        "files": stored.files,
    }


def usage(actor: Actor) -> dict[str, Any]:
    response = actor.get("/v1/usage")
    assert response.status_code == 200, response.json()
    return dict(response.json()["data"]["storage"])


def assert_exact(actor: Actor) -> dict[str, int]:
    """What the API and the quota count is what the rows say."""
    truth = fresh(actor.tenant)
    assert counted(actor.tenant) == truth
    assert usage(actor) == {"bytes": truth["stored"], "files": truth["files"]}
    return truth


def delta_rows(tenant: Tenant) -> int:
    return UsageDelta.objects.filter(project_id=tenant.project_id, mode=tenant.mode).count()


def fold_all() -> None:
    while usage_fold(max_tenants=1000):
        pass


def test_usage_is_exact_through_every_change_of_an_object(owner: Actor, sibling: Actor) -> None:
    limits_set(
        project=owner.project,
        mode=owner.tenant.mode,
        changes={
            "max_storage_bytes": 10**9,
            "allowed_content_types": ["text/plain", "application/octet-stream", "image/*"],
        },
    )
    uploaded_file(sibling, b"s" * 10, contentType="text/plain", filename="s.txt")
    sibling_usage = assert_exact(sibling)

    first = uploaded_file(owner, b"a" * 1000, contentType="text/plain", filename="a.txt")
    assert assert_exact(owner) == {"held": 1000, "stored": 1000, "objects": 1, "files": 1}

    pending = start_upload(owner, b"p" * 300, contentType="text/plain", filename="p.txt")
    assert assert_exact(owner)["held"] == 1300

    replaced = owner.post(
        f"/v1/files/{first['id']}/replace", {"contentType": "text/plain", "size": 50}
    )
    assert replaced.status_code == 200, replaced.json()
    assert assert_exact(owner)["held"] == 1350
    assert put_to(replaced.json()["upload"], b"r" * 50).status_code == 200
    assert owner.post(f"/v1/files/{first['id']}/replace/complete").status_code == 200
    assert assert_exact(owner) == {"held": 1350, "stored": 1050, "objects": 2, "files": 1}

    copy = owner.post(f"/v1/files/{first['id']}/copy", {})
    assert copy.status_code == 201, copy.json()
    assert assert_exact(owner) == {"held": 1350, "stored": 1050, "objects": 2, "files": 2}

    # A failed upload (bytes of a type the project does not accept): its object is
    # discarded with no verified size, so its reservation ends and it adds no bytes.
    data = pdf_bytes()
    failed = start_upload(owner, data, contentType="application/octet-stream", filename="x")
    assert assert_exact(owner)["held"] == 1350 + len(data)
    assert put_to(failed["upload"], data).status_code == 200
    assert owner.post(f"/v1/files/{failed['file']['id']}/complete").status_code == 422
    assert assert_exact(owner) == {"held": 1350, "stored": 1050, "objects": 2, "files": 2}

    # A multipart start reserves its declared size; aborting gives it back.
    multipart = owner.post(
        "/v1/uploads/multipart",
        {"filename": "big.bin", "contentType": "application/octet-stream", "size": 10**7},
    )
    assert multipart.status_code == 201, multipart.json()
    assert assert_exact(owner)["held"] == 1350 + 10**7
    upload_id = multipart.json()["data"]["upload"]["id"]
    assert owner.delete(f"/v1/uploads/multipart/{upload_id}").status_code == 200
    assert assert_exact(owner)["held"] == 1350

    # Pending uploads and replacements that expire give their reservations back.
    stale_replace = owner.post(
        f"/v1/files/{copy.json()['id']}/replace", {"contentType": "text/plain", "size": 70}
    )
    assert stale_replace.status_code == 200
    assert assert_exact(owner)["held"] == 1350 + 70
    later = timezone.now() + timedelta(hours=settings.SERVICE_PENDING_UPLOAD_EXPIRY_HOURS + 1)
    files_expire_pending(now=later)
    assert File.objects.get(id=pending["file"]["id"]).status == File.Status.FAILED
    assert assert_exact(owner) == {"held": 1050, "stored": 1050, "objects": 2, "files": 2}

    # Delete (the trash still holds the bytes), then purge: only what no file uses leaves.
    assert owner.delete(f"/v1/files/{first['id']}").status_code == 200
    assert assert_exact(owner) == {"held": 1050, "stored": 1050, "objects": 2, "files": 1}
    files_purge_expired(grace_days=0)
    # The copy keeps version 2's object (50 bytes); version 1 leaves.
    assert assert_exact(owner) == {"held": 50, "stored": 50, "objects": 1, "files": 1}

    assert delta_rows(owner.tenant) > 1
    fold_all()
    assert delta_rows(owner.tenant) == 1
    assert assert_exact(owner) == {"held": 50, "stored": 50, "objects": 1, "files": 1}
    assert assert_exact(sibling) == sibling_usage
    assert usage_recount(fix=False) == []


def test_statements_in_raw_sql_count_one_row_per_tenant(owner: Actor, sibling: Actor) -> None:
    """Folder jobs and sweeps write in SQL; the triggers count what any statement changes, in
    one delta row per tenant it changed and none when it changed nothing that counts."""
    before = delta_rows(owner.tenant)
    with connection.cursor() as cursor:
        cursor.execute(
            "INSERT INTO files_storedobject (project_id, mode, storage_key, state, declared_type,"
            " declared_size, size, created_at) SELECT CASE WHEN n %% 2 = 0 THEN %s ELSE %s END,"
            " 'test', 'seed-' || n, CASE WHEN n %% 3 = 0 THEN 'pending' ELSE 'live' END,"
            " 'text/plain', 7, CASE WHEN n %% 3 = 0 THEN NULL ELSE 5 END, now()"
            " FROM generate_series(1, 300) AS n",
            [owner.project.id, sibling.project.id],
        )
    assert delta_rows(owner.tenant) == before + 1
    assert assert_exact(owner)["held"] == 50 * 7 + 100 * 5
    assert assert_exact(sibling)["stored"] == 100 * 5
    with connection.cursor() as cursor:
        # Nothing that counts changes: no row.
        cursor.execute(
            "UPDATE files_storedobject SET checksum = 'c' WHERE storage_key LIKE 'seed-%%'"
        )
        assert delta_rows(owner.tenant) == before + 1
        cursor.execute(
            "UPDATE files_storedobject SET state = 'live', size = 6 WHERE state = 'pending'"
            " AND storage_key LIKE 'seed-%%'"
        )
        assert_exact(owner)
        cursor.execute(
            "UPDATE files_storedobject SET state = 'purged' WHERE storage_key LIKE 'seed-%%'"
        )
        assert assert_exact(owner) == {"held": 0, "stored": 0, "objects": 0, "files": 0}
        cursor.execute("DELETE FROM files_storedobject WHERE storage_key LIKE 'seed-%%'")
    assert_exact(owner)
    assert_exact(sibling)


@pytest.mark.django_db(transaction=True)
def test_thirty_parallel_starts_and_completes_with_folds_leave_the_exact_sum(
    transactional_db: None,
) -> None:
    racer = make_actor("usage-racer")
    limits_set(project=racer.project, mode=racer.tenant.mode, changes={"max_storage_bytes": 10**9})
    files = [
        uploaded_file(racer, b"u" * (100 + i), contentType="text/plain", filename=f"u{i}.txt")
        for i in range(6)
    ]
    started = []
    for i in range(10):
        data = b"p" * (300 + i)
        upload = start_upload(racer, data, contentType="text/plain", filename=f"p{i}.txt")
        assert put_to(upload["upload"], data).status_code == 200
        started.append(upload)

    def start(i: int) -> Any:
        body = upload_body(b"n" * (50 + i), content_type="text/plain", filename=f"n{i}.txt")
        return lambda: racer.post("/v1/files/upload", body)

    def complete(upload: dict[str, Any]) -> Any:
        return lambda: racer.post(f"/v1/files/{upload['file']['id']}/complete")

    def delete(file: dict[str, Any]) -> Any:
        return lambda: racer.delete(f"/v1/files/{file['id']}")

    def fold() -> str:
        usage_fold(max_tenants=10)
        return "folded"

    calls = [
        *[start(i) for i in range(30)],
        *[complete(u) for u in started],
        *[delete(f) for f in files[:4]],
        *[fold for _ in range(4)],
    ]
    results = at_once(*calls)

    statuses = [getattr(r, "status_code", r) for r in results]
    assert statuses == [201] * 30 + [200] * 10 + [200] * 4 + ["folded"] * 4
    truth = assert_exact(racer)
    assert truth["held"] == (
        sum(100 + i for i in range(6))
        + sum(300 + i for i in range(10))
        + sum(50 + i for i in range(30))
    )
    assert truth["files"] == 2 + 10
    fold_all()
    assert delta_rows(racer.tenant) == 1
    assert assert_exact(racer) == truth


@pytest.mark.django_db(transaction=True)
def test_a_fold_neither_waits_for_writers_nor_takes_their_rows(transactional_db: None) -> None:
    """A writer's transaction holds its delta row uncommitted while folds run: they finish at
    once (lock_timeout would raise otherwise), and its row counts once it commits."""
    actor = make_actor("usage-writer")
    for i in range(3):
        uploaded_file(actor, b"w" * (10 + i), contentType="text/plain", filename=f"w{i}.txt")
    with uncommitted_object(actor, "held-open", 500):
        with never_waiting():
            assert usage_fold(max_tenants=10) == 1
            assert usage_fold(max_tenants=10) == 0  # one committed row left: nothing to fold
        assert counted(actor.tenant)["stored"] == 10 + 11 + 12
    assert assert_exact(actor)["stored"] == 10 + 11 + 12 + 500
    assert delta_rows(actor.tenant) == 2
    fold_all()
    assert delta_rows(actor.tenant) == 1
    assert assert_exact(actor)["stored"] == 10 + 11 + 12 + 500


@pytest.mark.django_db(transaction=True)
def test_two_folds_at_once_count_each_row_once(transactional_db: None) -> None:
    actor = make_actor("usage-folds")
    with connection.cursor() as cursor:
        for n in range(200):  # 200 statements: 200 delta rows
            cursor.execute(
                "INSERT INTO files_storedobject (project_id, mode, storage_key, state,"
                " declared_type, declared_size, size, created_at)"
                " VALUES (%s, 'test', %s, 'live', 'text/plain', 3, 3, now())",
                [actor.project.id, f"{actor.project.id}/f{n}"],
            )
    assert delta_rows(actor.tenant) == 200
    truth = assert_exact(actor)

    # A fold in progress (its rewrite lock held): another fold leaves the tenant to it.
    def take_the_rewrite_lock() -> None:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended('usage:' || %s || ':' || %s, 0))",
                [actor.project.id, actor.tenant.mode],
            )

    with open_in_another_session(take_the_rewrite_lock):
        assert usage_fold(max_tenants=10) == 0
        assert delta_rows(actor.tenant) == 200

    # Folds at once, while writers add rows: every row is counted once.
    def write(n: int) -> Any:
        def run() -> int:
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO files_storedobject (project_id, mode, storage_key, state,"
                    " declared_type, declared_size, size, created_at)"
                    " VALUES (%s, 'test', %s, 'live', 'text/plain', 4, 4, now())",
                    [actor.project.id, f"{actor.project.id}/g{n}"],
                )
            return -1

        return run

    results = at_once(
        *[lambda: usage_fold(max_tenants=10) for _ in range(6)], *[write(n) for n in range(10)]
    )
    assert sum(results[:6]) >= 1 and results[6:] == [-1] * 10
    assert counted(actor.tenant)["stored"] == truth["stored"] + 40 == fresh(actor.tenant)["stored"]
    fold_all()
    assert delta_rows(actor.tenant) == 1
    assert assert_exact(actor)["stored"] == 200 * 3 + 10 * 4


def test_recount_usage_repairs_a_tampered_delta(owner: Actor, sibling: Actor) -> None:
    uploaded_file(owner, b"x" * 1000, contentType="text/plain", filename="x.txt")
    uploaded_file(sibling, b"y" * 10, contentType="text/plain", filename="y.txt")
    truth = assert_exact(owner)
    UsageDelta.objects.create(
        **{"project_id": owner.project.id, "mode": owner.tenant.mode},
        held_bytes=999,
        stored_bytes=999,
        stored_objects=5,
    )
    assert usage(owner) == {"bytes": 1999, "files": 1}

    out = StringIO()
    call_command("recount_usage", "--dry-run", stdout=out)
    assert f"{owner.project.id} test: held/stored bytes/objects were 1999/1999/6" in out.getvalue()
    assert "1 tenant(s) differ." in out.getvalue()
    assert usage(owner) == {"bytes": 1999, "files": 1}

    out = StringIO()
    call_command("recount_usage", stdout=out)
    assert "1 tenant(s) corrected." in out.getvalue()
    assert assert_exact(owner) == truth
    assert delta_rows(owner.tenant) == 1
    assert usage(sibling) == {"bytes": 10, "files": 1}

    # A tenant whose objects are all gone but whose rows say otherwise loses its rows.
    UsageDelta.objects.create(
        project_id=owner.project.id, mode="live", held_bytes=1, stored_bytes=1, stored_objects=1
    )
    out = StringIO()
    call_command("recount_usage", "--project", owner.project.id, stdout=out)
    assert "1 tenant(s) corrected." in out.getvalue()
    assert not UsageDelta.objects.filter(project_id=owner.project.id, mode="live").exists()
    out = StringIO()
    call_command("recount_usage", stdout=out)
    assert "0 tenant(s) corrected." in out.getvalue()


@pytest.mark.django_db(transaction=True)
def test_the_migration_starts_each_tenant_from_its_objects(transactional_db: None) -> None:
    """Objects stored before the usage deltas existed are counted from the migration on."""
    actor = make_actor("usage-before")
    other = make_actor("usage-before-other", environment="live")
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    executor.migrate([("files", "0011_job_failed_attempts")])
    try:
        with connection.cursor() as cursor:
            cursor.execute(
                "INSERT INTO files_storedobject (project_id, mode, storage_key, state,"
                " declared_type, declared_size, size, created_at)"
                " SELECT %s, %s, %s || n,"
                " (ARRAY['pending', 'live', 'discarded', 'purged'])[n %% 4 + 1],"
                " 'text/plain', 10, CASE WHEN n %% 4 = 0 THEN NULL ELSE n END, now()"
                " FROM generate_series(1, 40) AS n",
                [actor.project.id, actor.tenant.mode, f"{actor.project.id}/old-"],
            )
            cursor.execute(
                "INSERT INTO files_storedobject (project_id, mode, storage_key, state,"
                " declared_type, declared_size, size, created_at)"
                " VALUES (%s, 'live', %s, 'live', 'text/plain', 10, 70, now())",
                [other.project.id, f"{other.project.id}/old"],
            )
    finally:
        executor = MigrationExecutor(connection)
        executor.loader.build_graph()
        executor.migrate(latest)
    assert delta_rows(actor.tenant) == 1
    assert_exact(actor)
    assert fresh(actor.tenant)["objects"] == 20
    assert assert_exact(other)["stored"] == 70
    uploaded_file(actor, b"z" * 5, contentType="text/plain", filename="z.txt")
    assert_exact(actor)


@pytest.mark.django_db(transaction=True)
def test_recount_beside_an_uncommitted_writer_neither_waits_nor_miscounts(
    transactional_db: None,
) -> None:
    actor = make_actor("usage-recount-writer")
    uploaded_file(actor, b"r" * 40, contentType="text/plain", filename="r.txt")
    UsageDelta.objects.create(
        project_id=actor.project.id, mode="test", held_bytes=7, stored_bytes=7, stored_objects=7
    )
    with uncommitted_object(actor, "open", 300):
        with never_waiting():
            [drift] = usage_recount(project_id=actor.project.id)
        assert (drift.kept, drift.fresh) == ((47, 47, 8), (40, 40, 1))
        assert counted(actor.tenant)["stored"] == 40
    assert assert_exact(actor)["stored"] == 340
    assert usage_recount(project_id=actor.project.id) == []
