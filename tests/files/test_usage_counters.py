"""The usage counters (files_usagecounter, kept by triggers) equal the sums over the rows,
whatever changes the rows and however many transactions change them at once."""

from __future__ import annotations

from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection
from django.db.models import Case, Count, F, Sum, When
from django.db.models.functions import Coalesce

from accounts.limits import limits_set
from accounts.tenancy import Tenant
from files.models import File, StoredObject, UsageCounter
from files.services.sweeps import files_purge_expired
from files.usage import held_bytes, project_stored, usage_recount
from tests.factories import Actor, make_actor, upload_body
from tests.helpers import at_once, start_upload, uploaded_file
from tests.storage import put_to

State = StoredObject.State


def fresh_sums(tenant: Tenant) -> tuple[int, int, int, int]:
    """Stored bytes, stored objects, held bytes (stored plus pending reservations) and
    uploaded files, summed over the tenant's rows as they are now."""
    objects = StoredObject.objects.filter(project_id=tenant.project_id, mode=tenant.mode)
    stored = objects.filter(state__in=[State.LIVE, State.DISCARDED], size__isnull=False).aggregate(
        size=Coalesce(Sum("size"), 0), count=Count("*")
    )
    held = objects.filter(state__in=[State.PENDING, State.LIVE, State.DISCARDED]).aggregate(
        held=Coalesce(
            Sum(
                Case(
                    When(state=State.PENDING, then=F("declared_size")),
                    default=Coalesce(F("size"), 0),
                )
            ),
            0,
        )
    )
    files = File.objects.for_tenant(tenant).filter(status=File.Status.UPLOADED).count()
    return stored["size"], stored["count"], held["held"], files


def counted(tenant: Tenant) -> tuple[int, int, int, int]:
    stored = project_stored(tenant=tenant)
    return stored.bytes, stored.objects, held_bytes(tenant=tenant), stored.files


def usage(actor: Actor) -> dict[str, Any]:
    response = actor.get("/v1/usage")
    assert response.status_code == 200, response.json()
    return dict(response.json()["data"]["storage"])


@pytest.mark.django_db(transaction=True)
def test_counters_equal_the_sums_after_concurrent_uploads_completes_deletes_purges_and_copies(
    transactional_db: None,
) -> None:
    actor = make_actor("usage-racer")
    # A quota far above what the test stores: every start reserves under the limits row.
    limits_set(project=actor.project, mode=actor.tenant.mode, changes={"max_storage_bytes": 10**12})
    files = [
        uploaded_file(actor, b"u" * (100 + i), contentType="text/plain", filename=f"u{i}.txt")
        for i in range(12)
    ]
    started = []
    for i in range(6):
        data = b"p" * (300 + i)
        upload = start_upload(actor, data, contentType="text/plain", filename=f"p{i}.txt")
        assert put_to(upload["upload"], data).status_code == 200
        started.append(upload)
    assert actor.delete(f"/v1/files/{files[0]['id']}").status_code == 200

    def new_upload(i: int) -> Any:
        body = upload_body(b"n" * (50 + i), content_type="text/plain", filename=f"n{i}.txt")
        return actor.post("/v1/files/upload", body)

    def purge() -> Any:
        files_purge_expired(grace_days=0)
        return "purged"

    def post(url: str, body: Any = None) -> Callable[[], Any]:
        return lambda: actor.post(url, body)

    def delete(url: str) -> Callable[[], Any]:
        return lambda: actor.delete(url)

    def start(i: int) -> Callable[[], Any]:
        return lambda: new_upload(i)

    replace = {"contentType": "text/plain", "size": 777}
    calls: list[Callable[[], Any]] = [
        *[start(i) for i in range(8)],
        *[post(f"/v1/files/{s['file']['id']}/complete") for s in started],
        *[delete(f"/v1/files/{f['id']}") for f in files[1:6]],
        *[post(f"/v1/files/{f['id']}/copy", {}) for f in files[6:10]],
        *[post(f"/v1/files/{f['id']}/replace", replace) for f in files[10:12]],
        purge,
        purge,
    ]
    results = at_once(*calls)

    statuses = [getattr(r, "status_code", r) for r in results]
    assert statuses == [201] * 8 + [200] * 6 + [200] * 5 + [201] * 4 + [200] * 2 + ["purged"] * 2
    # Purge what the concurrent deletes left in the trash, after they all committed.
    files_purge_expired(grace_days=0)

    sums = fresh_sums(actor.tenant)
    assert counted(actor.tenant) == sums
    assert usage(actor) == {"bytes": sums[0], "files": sums[3]}
    # What the test did, by hand: 11 + 6 uploaded files kept, 4 copies sharing their objects;
    # 8 starts and 2 replaces pending.
    kept = sum(100 + i for i in range(1, 12)) - sum(100 + i for i in range(1, 6))
    assert sums[0] == kept + sum(300 + i for i in range(6))
    assert sums[3] == 6 + 6 + 4
    assert sums[2] == sums[0] + sum(50 + i for i in range(8)) + 2 * 777
    assert usage_recount(fix=False) == []


def test_recount_usage_fixes_a_tampered_counter(owner: Actor, sibling: Actor) -> None:
    uploaded_file(owner, b"x" * 1000, contentType="text/plain", filename="x.txt")
    uploaded_file(sibling, b"y" * 10, contentType="text/plain", filename="y.txt")
    truth = usage(owner)
    assert truth == {"bytes": 1000, "files": 1}
    UsageCounter.objects.filter(project_id=owner.project.id).update(
        stored_bytes=F("stored_bytes") + 999, uploaded_files=F("uploaded_files") + 5
    )
    assert usage(owner) == {"bytes": 1999, "files": 6}

    out = StringIO()
    call_command("recount_usage", "--dry-run", stdout=out)
    assert f"{owner.project.id} test" in out.getvalue()
    assert "1 tenant(s) differ." in out.getvalue()
    assert usage(owner) == {"bytes": 1999, "files": 6}

    out = StringIO()
    call_command("recount_usage", stdout=out)
    assert "1 tenant(s) corrected." in out.getvalue()
    assert usage(owner) == truth
    assert usage(sibling) == {"bytes": 10, "files": 1}
    assert counted(owner.tenant) == fresh_sums(owner.tenant)

    out = StringIO()
    call_command("recount_usage", "--project", owner.project.id, stdout=out)
    assert "0 tenant(s) corrected." in out.getvalue()


def test_rows_written_in_raw_sql_are_counted(owner: Actor) -> None:
    """Folder jobs and sweeps write in SQL; the triggers count what any statement changes."""
    file = uploaded_file(owner, b"z" * 500, contentType="text/plain", filename="z.txt")
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE files_file SET status = 'deleted', status_before_delete = status WHERE id = %s",
            [file["id"]],
        )
        cursor.execute(
            "INSERT INTO files_storedobject (project_id, mode, storage_key, state, declared_type,"
            " declared_size, size, created_at) SELECT %s, 'test', 'seed-' || n, 'live',"
            " 'text/plain', 7, 7, now() FROM generate_series(1, 300) AS n",
            [owner.project.id],
        )
    assert usage(owner) == {"bytes": 500 + 300 * 7, "files": 0}
    assert counted(owner.tenant) == fresh_sums(owner.tenant)
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM files_storedobject WHERE storage_key LIKE 'seed-%%'")
    assert usage(owner) == {"bytes": 500, "files": 0}
