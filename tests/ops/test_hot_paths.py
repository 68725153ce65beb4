"""What the hot paths' shortcuts must not change: a revoked key stops at once on
the key-joined read, every way of sending a bad key answers as before, the admin keeps its
sessions and CSRF check while API answers carry nothing of them, and a connection PostgreSQL
closed is not reused by the socket-level health check."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

import psycopg
import psycopg.types.json
import pytest
from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models.signals import post_init
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.models import ApiKey, Organization, Project
from accounts.services import api_key_revoke, project_create
from accounts.tenancy import Tenant
from files.models import File, StoredObject
from files.services.upload import file_upload_start
from storage_service.fastfetch import _plain, columns, fetch_row, instance
from storage_service.ids import new_id
from storage_service.serializers import CleanedField
from tests.factories import Actor
from tests.helpers import error_code, start_upload
from tests.subprocesses import database_url
from webhooks.models import Delivery, Event
from webhooks.services import endpoint_create, event_record

pytestmark = pytest.mark.django_db


def test_a_revoked_key_is_refused_by_the_next_single_file_read(owner: Actor) -> None:
    file_id = start_upload(owner)["file"]["id"]
    assert owner.get(f"/v1/files/{file_id}").status_code == 200
    api_key_revoke(key_id=owner.key.api_key.id)
    refused = owner.get(f"/v1/files/{file_id}")
    assert refused.status_code == 401 and error_code(refused) == "UNAUTHENTICATED"
    assert refused["WWW-Authenticate"] == "Bearer"
    assert "data" not in refused.json()


@pytest.mark.parametrize(
    ("header", "message"),
    [
        (None, "Send 'Authorization: Bearer <API key>'."),
        ("Basic abc", "The Authorization header must be 'Bearer <API key>'."),
        ("Bearer ", "The Authorization header must be 'Bearer <API key>'."),
        ("Bearer not-a-key", "The API key is unknown or has been revoked."),
        ("Bearer sk_test_" + "A" * 43, "The API key is unknown or has been revoked."),
    ],
)
def test_bad_keys_answer_the_same_on_the_single_file_read_as_elsewhere(
    owner: Actor, header: str | None, message: str
) -> None:
    file_id = start_upload(owner)["file"]["id"]
    client = APIClient()
    if header is not None:
        client.credentials(HTTP_AUTHORIZATION=header)
    for path in (f"/v1/files/{file_id}", "/v1/files/not-an-id", "/v1/me"):
        refused = client.get(path)
        assert refused.status_code == 401, path
        assert refused.json()["error"] == {"code": "UNAUTHENTICATED", "message": message}, path


def test_another_projects_file_is_404_on_the_key_joined_read(owner: Actor, sibling: Actor) -> None:
    file_id = start_upload(owner)["file"]["id"]
    for path in (f"/v1/files/{file_id}", "/v1/files/file_00000000000000000000000000"):
        missing = sibling.get(path)
        assert missing.status_code == 404 and error_code(missing) == "FILE_NOT_FOUND"


def test_api_answers_carry_nothing_of_the_admins_middleware(owner: Actor) -> None:
    file_id = start_upload(owner)["file"]["id"]
    answer = owner.get(f"/v1/files/{file_id}")
    assert answer.status_code == 200
    assert "Set-Cookie" not in answer and "Cookie" not in answer.get("Vary", "")
    # What the outer middleware adds stays: security headers, frame denial, request id.
    assert answer["X-Content-Type-Options"] == "nosniff"
    assert answer["X-Frame-Options"] == "DENY"
    assert answer["X-Request-Id"]


def test_the_admin_keeps_sessions_and_its_csrf_check() -> None:
    User.objects.create_superuser("staff", "staff@example.test", "pw")
    browser = Client(enforce_csrf_checks=True)
    form = browser.get("/admin/login/")
    assert form.status_code == 200
    # Without the token the form carries, the POST is refused (CSRF runs for the admin).
    refused = browser.post("/admin/login/", {"username": "staff", "password": "pw"})
    assert refused.status_code == 403
    token = form.cookies["csrftoken"].value
    logged_in = browser.post(
        "/admin/login/",
        {"username": "staff", "password": "pw", "csrfmiddlewaretoken": token},
    )
    assert logged_in.status_code == 302
    assert "sessionid" in logged_in.cookies
    assert browser.get("/admin/").status_code == 200  # the session, read back
    assert browser.get("/static/admin/css/base.css").status_code == 200  # whitenoise


def test_csrf_middleware_guards_every_path_but_the_apis() -> None:
    """Outside /v1/ the CSRF middleware's own check still runs (the catch-all 404 view is not
    exempt); under /v1/ an unknown route answers the contract's 404, not a CSRF 403."""
    browser = Client(enforce_csrf_checks=True)
    refused = browser.post("/nothing-here")
    assert refused.status_code == 403
    assert refused.json()["error"] == {"code": "FORBIDDEN", "message": "CSRF verification failed."}
    missing = browser.post("/v1/nothing-here")
    assert missing.status_code == 404 and error_code(missing) == "NOT_FOUND"


@pytest.mark.django_db(transaction=True)
def test_a_connection_postgresql_closed_is_not_reused() -> None:
    connection.ensure_connection()
    assert connection.connection is not None
    assert connection.is_usable()  # a quiet socket: usable, without a query
    pid = connection.connection.info.backend_pid
    with psycopg.connect(database_url(), autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
    deadline = time.monotonic() + 5
    while connection.is_usable():
        assert time.monotonic() < deadline, "the closed connection still looks usable"
        time.sleep(0.05)
    # As at the start of a request: the health check closes it, the next query reconnects.
    assert connection.health_check_enabled  # type: ignore[attr-defined]
    connection.health_check_done = False  # type: ignore[attr-defined]
    connection.close_if_health_check_failed()
    assert connection.connection is None
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)


def test_upload_start_writes_its_change_and_event_in_one_statement(owner: Actor) -> None:
    """The key lookup, then ONE statement for the stored object, the file, the file.created
    event and its deliveries: no savepoint, no INSERT of its own for each."""
    with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        endpoint_create(tenant=owner.tenant, url="http://127.0.0.1:9/hook", events=None)
    with CaptureQueriesContext(connection) as queries:
        started = start_upload(owner, metadata={"k": "v"}, path="a/b")
    assert len(queries.captured_queries) == 2, [q["sql"][:80] for q in queries.captured_queries]
    file = File.objects.select_related("current_object").get(id=started["file"]["id"])
    assert owner.get(f"/v1/files/{file.id}").json()["data"] == started["file"]
    assert file.current_object.state == "pending"
    assert file.current_object.project_id == owner.project.id
    assert started["upload"]["url"].split("?")[0].endswith(file.current_object.storage_key)
    event = Event.objects.get(project=owner.project, type="file.created")
    assert event.data["fileId"] == file.id and event.data["path"] == "a/b"
    assert Delivery.objects.filter(event=event, status="PENDING").count() == 1


@pytest.mark.django_db(transaction=True)
def test_upload_start_leaves_nothing_when_its_event_cannot_be_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The one statement is atomic: an event that fails (here a clashing id) takes the
    stored object and the file with it, as the transaction did before."""
    project = project_create(name="atomic-upload")
    tenant = Tenant(project=project, mode="live")
    with transaction.atomic():
        taken = event_record(tenant=tenant, type="file.created", data={}).id
    monkeypatch.setattr(
        "webhooks.services.new_id", lambda prefix: taken if prefix == "evt" else new_id(prefix)
    )
    with pytest.raises(IntegrityError):
        file_upload_start(tenant=tenant, filename="a.png", content_type="image/png", size=10)
    assert not File.objects.filter(project=project).exists()
    assert not StoredObject.objects.filter(project=project).exists()
    assert Event.objects.filter(project=project).count() == 1


def test_query_validation_builds_no_fields_per_request(
    owner: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The list's query validator reuses one bound set of its fields (DRF would deep-copy
    them for every request), and still refuses each bad parameter by name (VALIDATION_ERROR)."""
    assert owner.get("/v1/files", {"limit": "5"}).status_code == 200  # warm
    built: list[str] = []
    original = CleanedField.__init__

    def counting(self: CleanedField, *args: Any, **kwargs: Any) -> None:
        built.append(type(self).__name__)
        original(self, *args, **kwargs)

    monkeypatch.setattr(CleanedField, "__init__", counting)
    assert owner.get("/v1/files", {"limit": "5", "order": "asc"}).status_code == 200
    refused = owner.get("/v1/files", {"limit": "0", "order": "up"})
    assert refused.status_code == 400 and error_code(refused) == "VALIDATION_ERROR"
    assert set(refused.json()["error"]["details"]) == {"limit", "order"}
    assert built == []


TIMESTAMPS = [
    "2026-11-23 10:00:00+00",
    "2026-11-23 10:00:00.123456+00",
    "2026-11-23 12:00:00.5+02",
    "1970-01-01 00:00:00+00",
    "0001-01-01 00:00:00+00",
    "9999-12-31 23:59:59.999999+00",
    "2024-02-29 23:59:59.000001-08",
]


def test_the_c_timestamp_loader_reads_what_djangos_loader_reads() -> None:
    """The backend reads timestamptz with psycopg's C loader; Django's own loader
    would give the same instants in the same tzinfo object."""
    from django.db.backends.postgresql.psycopg_any import register_tzloader  # type: ignore[import-untyped]

    sql = "SELECT " + ", ".join("%s::timestamptz" for _ in TIMESTAMPS)
    with connection.cursor() as cursor:
        cursor.execute(sql, TIMESTAMPS)
        fast = cursor.fetchone()
    with connection.cursor() as cursor:
        register_tzloader(connection.timezone, cursor.cursor)
        cursor.execute(sql, TIMESTAMPS)
        django = cursor.fetchone()
    assert fast == django
    assert all(value.tzinfo is connection.timezone for value in fast)
    assert [value.isoformat() for value in fast] == [value.isoformat() for value in django]


def test_hot_statements_are_prepared_once_per_connection(owner: Actor) -> None:
    file_id = start_upload(owner)["file"]["id"]
    for _ in range(3):
        assert owner.get(f"/v1/files/{file_id}").status_code == 200
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements WHERE NOT from_sql")
        prepared = [row[0] for row in cursor.fetchall()]
    joined = [statement for statement in prepared if "LEFT JOIN files_file" in statement]
    assert len(joined) == 1, prepared  # the key-and-file read, prepared once, reused


def _fields(obj: Any) -> list[tuple[str, Any]]:
    """An instance's attributes in order, but its state (compared apart)."""
    return [(name, value) for name, value in vars(obj).items() if name != "_state"]


def _read_fast(model: Any, pk: Any) -> Any:
    _, cols = columns(model)
    row = fetch_row(f"SELECT {cols} FROM {model._meta.db_table} WHERE id = %s", [pk])
    assert row is not None
    return instance(model, row)


def test_fast_instances_are_what_the_orm_makes(owner: Actor) -> None:
    """instance() sets a full row's values directly where Model.__init__ would only set them:
    the same attributes, values, order and state as the ORM's own instance, and
    it saves like one."""
    file_id = start_upload(owner, metadata={"a": [1, 2.5, None], "é": "\u2028"})["file"]["id"]
    project = owner.project
    rows: list[tuple[Any, Any]] = [
        (File, file_id),
        (ApiKey, owner.key.api_key.pk),
        (Project, project.pk),
        (Organization, project.organization_id),
    ]
    for model, pk in rows:
        fast, orm = _read_fast(model, pk), model.objects.get(pk=pk)
        assert type(fast) is model
        assert _fields(fast) == _fields(orm), model
        assert (fast._state.adding, fast._state.db) == (False, "default")
        assert (orm._state.adding, orm._state.db) == (False, "default")
    fast = _read_fast(File, file_id)
    assert fast.project == project  # the foreign key resolves as on any instance
    fast.filename = "renamed.txt"
    fast.save(update_fields=["filename", "updated_at"])
    assert File.objects.get(pk=file_id).filename == "renamed.txt"


def test_a_model_with_init_listeners_is_made_by_from_db(owner: Actor) -> None:
    """A model something listens to (post_init) is made by Model.from_db, so the listener
    still runs for every instance."""
    file_id = start_upload(owner)["file"]["id"]
    seen: list[str] = []

    def listen(sender: type[File], instance: File, **_: Any) -> None:
        seen.append(instance.id)

    post_init.connect(listen, sender=File)
    _plain.cache_clear()
    try:
        read = _read_fast(File, file_id)
    finally:
        post_init.disconnect(listen, sender=File)
        _plain.cache_clear()
    assert seen == [file_id] and read.id == file_id


def test_an_insert_compiled_once_sends_what_the_compiler_sends(
    owner: Actor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """insert_sql keeps each shape's SQL and then prepares the values itself: the same SQL
    and the same values as Django's insert compiler, for every field of the upload's rows."""
    from django.utils import timezone

    from storage_service import fastfetch

    monkeypatch.setattr(timezone, "now", lambda: datetime(2026, 11, 23, 12, 0, 0, 123456, UTC))

    def rows() -> tuple[StoredObject, File]:
        stored = StoredObject(
            project=owner.project,
            mode="test",
            storage_key="k/1",
            declared_type="image/png",
            declared_size=5,
        )
        file = File(
            id="file_01jd0000000000000000000000",
            project=owner.project,
            mode="test",
            filename="a \u2028 b.png",
            path="x/y",
            content_type="image/png",
            size=5,
            metadata={"n": 1.5, "s": "\u00e9", "l": [1, None]},
            current_object_id=7,
        )
        return stored, file

    sent = []
    for cached in (False, True):
        if not cached:
            monkeypatch.setattr(fastfetch, "_INSERTS", {})
        stored, file = rows()
        sent.append(
            (
                fastfetch.insert_sql(stored, returning="id"),
                fastfetch.insert_sql(file, expressions={"current_object_id": "(SELECT 1)"}),
            )
        )
        assert not stored._state.adding and not file._state.adding
    assert len(fastfetch._INSERTS) == 2

    def comparable(value: Any) -> Any:
        return (
            ("jsonb", value.obj, value.dumps)
            if isinstance(value, psycopg.types.json.Jsonb)
            else value
        )

    for (compiled_sql, compiled), (cached_sql, cached) in zip(*sent, strict=True):
        assert cached_sql == compiled_sql
        assert [comparable(value) for value in cached] == [comparable(value) for value in compiled]


UPLOAD = {"filename": "a.png", "contentType": "image/png", "size": 5}


def _revoke_elsewhere(actor: Actor) -> None:
    """Revoke as another process would: in the database only, nothing of this process told."""
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE accounts_apikey SET revoked_at = now() WHERE id = %s", [actor.key.api_key.pk]
        )


def _unknown_key_answer(response: Any) -> None:
    assert response.status_code == 401 and error_code(response) == "UNAUTHENTICATED"
    assert response["WWW-Authenticate"] == "Bearer"
    assert response.json()["error"]["message"] == "The API key is unknown or has been revoked."


def test_an_upload_with_a_key_this_process_knows_is_one_statement(owner: Actor) -> None:
    assert owner.post("/v1/files/upload", UPLOAD).status_code == 201  # the key, now known
    with CaptureQueriesContext(connection) as queries:
        started = owner.post("/v1/files/upload", UPLOAD)
    assert started.status_code == 201
    # One statement: no lookup of the key before it (in a test's transaction, the savepoint
    # that keeps the transaction usable if the key was revoked comes around it).
    statements = [q["sql"] or "" for q in queries.captured_queries]
    assert len([sql for sql in statements if "SAVEPOINT" not in sql]) == 1, statements
    assert File.objects.filter(id=started.json()["file"]["id"]).exists()


@pytest.mark.parametrize("transactional", [False, True])
def test_a_key_revoked_elsewhere_uploads_nothing_at_once(
    request: pytest.FixtureRequest, transactional: bool
) -> None:
    """The known key is not looked up again, but its upload checks it in the same statement:
    revoked by another process, the very next upload writes nothing and answers the usual
    401, and the process forgets the key."""
    if transactional:
        request.getfixturevalue("transactional_db")
    from tests.factories import make_actor

    actor = make_actor("revoked-elsewhere")
    assert actor.post("/v1/files/upload", UPLOAD).status_code == 201
    files, events = File.objects.count(), Event.objects.count()
    _revoke_elsewhere(actor)
    _unknown_key_answer(actor.post("/v1/files/upload", UPLOAD))
    assert (File.objects.count(), Event.objects.count()) == (files, events)
    assert StoredObject.objects.filter(project=actor.project).count() == files
    # Forgotten: later requests take the usual path, with the same answer.
    _unknown_key_answer(actor.post("/v1/files/upload", UPLOAD))
    assert actor.get("/v1/me").status_code == 401


@override_settings(SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=1)
def test_a_key_revoked_elsewhere_is_401_before_429_and_before_400(owner: Actor) -> None:
    """As the DRF view orders its refusals: an unknown key first, then the budget, then the
    body, though the lane knew the key."""
    assert owner.post("/v1/files/upload", UPLOAD).status_code == 201  # spends the budget
    limited = owner.post("/v1/files/upload", UPLOAD)
    assert limited.status_code == 429
    _revoke_elsewhere(owner)
    _unknown_key_answer(owner.post("/v1/files/upload", UPLOAD))
    _unknown_key_answer(owner.post("/v1/files/upload", {"filename": ""}))


@pytest.mark.parametrize(
    "body",
    [
        {"filename": "a.png", "contentType": "image/png", "size": 5},
        {"filename": "a.png", "contentType": "image/png", "size": 5, "path": "x/y"},
        {"filename": "", "contentType": "image/png", "size": -1, "metadata": [1]},
        {"filename": "a.png", "contentType": "nope", "size": "5", "fileName": "typo"},
        {},
        [],
        "text",
        {"filename": None, "contentType": None, "size": None},
    ],
)
def test_one_shared_validator_answers_as_a_serializer_per_request(body: Any) -> None:
    """validated() runs one serializer instance per class for every request: the
    same values and the same refusals as DRF's is_valid on a new instance."""
    from rest_framework import serializers

    from files.serializers import UploadRequest
    from storage_service.serializers import validated

    fresh = UploadRequest(data=body)
    valid = fresh.is_valid()
    if valid:
        assert validated(UploadRequest, body) == dict(fresh.validated_data)
        return
    with pytest.raises(serializers.ValidationError) as refused:
        validated(UploadRequest, body)
    assert refused.value.detail == fresh.errors
    assert json.dumps(refused.value.detail) == json.dumps(fresh.errors)


@pytest.mark.django_db(transaction=True)
def test_a_revoked_key_uploads_nothing_on_any_served_process(serve: Any) -> None:
    """Black-box, over HTTP, two gunicorn workers that have both used the key: revoked, the
    very next upload on either is the 401 and writes nothing (the workers remember the key,
    not whether it is active)."""
    import requests

    from tests.factories import make_actor

    actor = make_actor("served-revoked")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    with serve(workers=2) as base:
        for _ in range(8):  # a new connection each: gunicorn spreads them over both workers
            started = requests.post(f"{base}/v1/files/upload", json=UPLOAD, headers=headers)
            assert started.status_code == 201, started.text
        files = File.objects.filter(project=actor.project).count()
        api_key_revoke(key_id=actor.key.api_key.id)
        for _ in range(8):
            refused = requests.post(f"{base}/v1/files/upload", json=UPLOAD, headers=headers)
            assert refused.status_code == 401, refused.text
            assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
    assert File.objects.filter(project=actor.project).count() == files == 8
