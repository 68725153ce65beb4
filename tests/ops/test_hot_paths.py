"""What the hottest requests (GET one file, upload start) must keep: a revoked key stops at
once, every way of sending a bad key answers as everywhere, refusals come in the order 401,
429, then 400/404, the upload's change and its event are written together, the admin keeps its
sessions and CSRF check while API answers carry nothing of them, and a connection PostgreSQL
closed is not reused."""

from __future__ import annotations

import time
from typing import Any

import psycopg
import psycopg.types.json
import pytest
import requests
from django.contrib.auth.models import User
from django.core.signals import request_started
from django.db import IntegrityError, connection, transaction
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from accounts.services import api_key_revoke, project_create
from accounts.tenancy import Tenant
from events.models import Event
from events.services import event_record
from files.models import File, StoredObject
from files.services.upload import file_upload_start
from storage_service.ids import new_id
from tests.factories import Actor
from tests.helpers import error_code, start_upload, within_one_window
from tests.servers import serve_api
from tests.subprocesses import database_url
from webhooks.models import Delivery
from webhooks.services import endpoint_create

pytestmark = pytest.mark.django_db


def test_a_revoked_key_is_refused_by_the_next_single_file_read(owner: Actor) -> None:
    file_id = start_upload(owner)["file"]["id"]
    assert owner.get(f"/v1/files/{file_id}").status_code == 200
    api_key_revoke(key_id=owner.key.api_key.id)
    refused = owner.get(f"/v1/files/{file_id}")
    assert refused.status_code == 401 and error_code(refused) == "UNAUTHENTICATED"
    assert refused["WWW-Authenticate"] == "Bearer"
    assert "data" not in refused.json()


def test_the_single_file_read_is_one_statement_in_every_outcome(
    owner: Actor, sibling: Actor
) -> None:
    """The key and the file come in one round trip, found or not."""
    file_id = start_upload(owner)["file"]["id"]
    for actor, path, status in (
        (owner, f"/v1/files/{file_id}", 200),
        (sibling, f"/v1/files/{file_id}", 404),
        (owner, "/v1/files/not-an-id", 404),
    ):
        with CaptureQueriesContext(connection) as queries:
            answered = actor.get(path)
        assert answered.status_code == status, path
        assert len(queries) == 1, [query["sql"][:80] for query in queries]
    shown = owner.get(f"/v1/files/{file_id}").json()["data"]
    assert shown["id"] == file_id and shown["status"] == "pending"


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


def test_api_answers_set_no_cookie_for_the_admins_cookies(owner: Actor) -> None:
    """A browser that used the admin sends its cookies to the API too (here a session that
    has since expired, and its CSRF token): API answers set none and vary on none, while the
    admin still reads them and clears the stale session."""
    file_id = start_upload(owner)["file"]["id"]
    owner.client.cookies["sessionid"] = "stale-session-key"
    owner.client.cookies["csrftoken"] = "a" * 32
    for answer in (
        owner.get(f"/v1/files/{file_id}"),
        owner.get("/v1/files?limit=2"),
        owner.get("/v1/nothing-here"),
        owner.post("/v1/files/upload", UPLOAD),
    ):
        assert answer.status_code in (200, 201, 404), answer.content
        assert "Set-Cookie" not in answer and not answer.cookies
        assert "Cookie" not in answer.get("Vary", "")
    admin = owner.client.get("/admin/login/")
    assert admin.status_code == 200
    assert admin.cookies["sessionid"].value == ""  # the stale session, deleted


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
    """At a request's start (CONN_HEALTH_CHECKS) a connection PostgreSQL closed is replaced
    before the request's first query, which is answered on a new one."""
    connection.ensure_connection()
    assert connection.connection is not None
    pid = connection.connection.info.backend_pid
    request_started.send(sender=None)  # a request on the connection PostgreSQL keeps
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        assert cursor.fetchone() == (pid,)  # kept, not reconnected
    _terminate(pid)
    request_started.send(sender=None)  # the next request
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        (new_pid,) = cursor.fetchone()
    assert new_pid != pid


def _terminate(pid: int) -> None:
    with psycopg.connect(database_url(), autocommit=True) as admin:
        # With a timeout PostgreSQL answers once the backend has exited.
        admin.execute("SELECT pg_terminate_backend(%s, 5000)", (pid,))


@pytest.mark.django_db(transaction=True)
def test_a_served_request_after_postgresql_closed_its_connection_is_answered(
    owner: Actor,
) -> None:
    """A restart or a failover closes every connection the API holds: the next request on each
    is still answered, not failed."""
    file_id = start_upload(owner)["file"]["id"]
    headers = {"Authorization": f"Bearer {owner.key.raw_key}"}
    backends = "SELECT pid FROM pg_stat_activity WHERE datname = current_database()"
    with psycopg.connect(database_url(), autocommit=True) as admin:
        before = {pid for (pid,) in admin.execute(backends)}
        with serve_api(workers=1, WEB_THREADS="1") as base:
            assert requests.get(f"{base}/v1/files/{file_id}", headers=headers, timeout=30).ok
            # Only the server's: this process's connections are the test's own.
            served = {pid for (pid,) in admin.execute(backends)} - before - {admin.info.backend_pid}
            assert served
            for pid in served:
                _terminate(pid)
            time.sleep(0.2)
            for _ in range(3):
                again = requests.get(f"{base}/v1/files/{file_id}", headers=headers, timeout=30)
                assert again.status_code == 200, again.text
                assert again.json()["data"]["id"] == file_id


@pytest.mark.django_db(transaction=True)
def test_upload_start_writes_its_change_and_event_in_one_transaction(owner: Actor) -> None:
    """The key lookup and the tenant's limits, then one transaction: the stored object, the
    file, the file.created event (which finds the subscribed endpoints) and its deliveries."""
    with override_settings(SERVICE_WEBHOOK_ALLOW_PRIVATE_NETWORKS=True):
        endpoint_create(tenant=owner.tenant, url="http://127.0.0.1:9/hook", events=None)
    with CaptureQueriesContext(connection) as queries:
        started = start_upload(owner, metadata={"k": "v"}, path="a/b")
    statements = [q["sql"].split()[:3] for q in queries.captured_queries]
    assert [words[0] for words in statements] == [
        "SELECT",  # the key
        "SELECT",  # the limits
        "BEGIN",
        "INSERT",  # the stored object
        "INSERT",  # the file
        "WITH",  # the event, and the endpoints to deliver it to
        "INSERT",  # the deliveries
        "COMMIT",
    ], statements
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
    """The upload start is atomic: an event that fails (here a clashing id) takes the stored
    object and the file with it."""
    project = project_create(name="atomic-upload")
    tenant = Tenant(project=project, mode="live")
    with transaction.atomic():
        taken = event_record(tenant=tenant, type="file.created", data={}).id
    monkeypatch.setattr(
        "events.services.new_id", lambda prefix: taken if prefix == "evt" else new_id(prefix)
    )
    with pytest.raises(IntegrityError):
        file_upload_start(tenant=tenant, filename="a.png", content_type="image/png", size=10)
    assert not File.objects.filter(project=project).exists()
    assert not StoredObject.objects.filter(project=project).exists()
    assert Event.objects.filter(project=project).count() == 1


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


@pytest.mark.parametrize("transactional", [False, True])
def test_a_key_revoked_elsewhere_uploads_nothing_at_once(
    request: pytest.FixtureRequest, transactional: bool
) -> None:
    """Revoked by another process (in the database only), the very next upload writes
    nothing and answers the usual 401, and so does every later request."""
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
    _unknown_key_answer(actor.post("/v1/files/upload", UPLOAD))
    assert actor.get("/v1/me").status_code == 401


@override_settings(SERVICE_RATE_LIMIT_WRITES_PER_MINUTE=1)
def test_a_key_revoked_elsewhere_is_401_before_429_and_before_400(owner: Actor) -> None:
    """Refusals in order: an unknown key first, then the budget, then the body."""
    within_one_window(5)
    assert owner.post("/v1/files/upload", UPLOAD).status_code == 201  # spends the budget
    limited = owner.post("/v1/files/upload", UPLOAD)
    assert limited.status_code == 429
    _revoke_elsewhere(owner)
    _unknown_key_answer(owner.post("/v1/files/upload", UPLOAD))
    _unknown_key_answer(owner.post("/v1/files/upload", {"filename": ""}))


@pytest.mark.django_db(transaction=True)
def test_a_revoked_key_uploads_nothing_on_any_served_process(api_base: str) -> None:
    """Black-box, over HTTP, two API workers (the session server's) that have both used the
    key: revoked, the very next upload on either is the 401 and writes nothing."""
    import requests

    from tests.factories import make_actor

    actor = make_actor("served-revoked")
    headers = {"Authorization": f"Bearer {actor.key.raw_key}"}
    for _ in range(8):  # a new connection each, spread over both workers
        started = requests.post(f"{api_base}/v1/files/upload", json=UPLOAD, headers=headers)
        assert started.status_code == 201, started.text
    files = File.objects.filter(project=actor.project).count()
    api_key_revoke(key_id=actor.key.api_key.id)
    for _ in range(8):
        refused = requests.post(f"{api_base}/v1/files/upload", json=UPLOAD, headers=headers)
        assert refused.status_code == 401, refused.text
        assert refused.json()["error"]["code"] == "UNAUTHENTICATED"
    assert File.objects.filter(project=actor.project).count() == files == 8
