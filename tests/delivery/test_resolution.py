"""Signing delivery URLs through the API and resolving them (GET/HEAD /d/…), against real
PostgreSQL, Redis and SeaweedFS: the Location is fetched from the store, bytes and headers
checked."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client, override_settings

from accounts import bandwidth as bandwidth_counts
from accounts import throttling
from accounts.bandwidth import bandwidth_fold
from accounts.models import BandwidthUsage
from delivery import signing
from tests.factories import Actor, pdf_bytes, png_bytes
from tests.helpers import error_code, start_upload, uploaded_file, within_one_window
from tests.storage import get_from, put_to
from tests.variants.images import encode, stripes
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db
browser = Client()


def new_key(actor: Actor) -> dict[str, Any]:
    response = actor.post("/v1/delivery-keys", {})
    assert response.status_code == 201, response.json()
    return response.json()["data"]


def sign(actor: Actor, file_id: str, **body: Any) -> Any:
    return actor.post(f"/v1/files/{file_id}/delivery-url", body)


def signed_url(actor: Actor, file_id: str, **body: Any) -> str:
    response = sign(actor, file_id, **body)
    assert response.status_code == 200, response.json()
    return response.json()["url"]


def resolve(url: str, method: str = "get", **headers: str) -> Any:
    path = urlsplit(url)
    target = path.path + (f"?{path.query}" if path.query else "")
    return getattr(browser, method)(target, headers=headers or None)


def image(actor: Actor, size: tuple[int, int] = (600, 200)) -> dict[str, Any]:
    return uploaded_file(actor, encode(stripes(size), "PNG"))


def process_pending() -> None:
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)


# --- Signing through the API ---------------------------------------------------------------


def test_signing_needs_an_active_key(owner: Actor) -> None:
    file = uploaded_file(owner)
    refused = sign(owner, file["id"])
    assert refused.status_code == 409
    assert error_code(refused) == "NO_DELIVERY_KEY"
    new_key(owner)
    signed = sign(owner, file["id"]).json()
    assert signed["expiresAt"] is None
    assert urlsplit(signed["url"]).path.startswith("/d/dk_")


def test_signing_refusals(owner: Actor, sibling: Actor) -> None:
    new_key(owner)
    pdf = uploaded_file(owner, pdf_bytes(), filename="a.pdf", contentType="application/pdf")
    pending = start_upload(owner)["file"]
    cases = [
        (sign(owner, pdf["id"], transform={"width": 10}), 422, "NOT_PROCESSABLE"),
        (sign(owner, pending["id"]), 409, "FILE_NOT_UPLOADED"),
        (sign(owner, pdf["id"], version=2), 400, "VALIDATION_ERROR"),
        (sign(owner, pdf["id"], expiresInSeconds=59), 400, "VALIDATION_ERROR"),
        (sign(owner, pdf["id"], expiresInSeconds=31_536_001), 400, "VALIDATION_ERROR"),
        (sign(owner, pdf["id"], transform={"fit": "cover"}), 400, "VALIDATION_ERROR"),
        (sign(owner, pdf["id"], transform={"width": 10, "format": "gif"}), 400, "VALIDATION_ERROR"),
        (
            sign(owner, pdf["id"], deliveryKeyId="dk_01kdwzjq00a1b2c3d4e5f6g7h8"),
            404,
            "DELIVERY_KEY_NOT_FOUND",
        ),
        (sign(sibling, pdf["id"]), 404, "FILE_NOT_FOUND"),
    ]
    for response, status, code in cases:
        assert (response.status_code, error_code(response)) == (status, code), response.json()


def test_the_named_key_signs_and_the_expiry_is_in_the_url(owner: Actor) -> None:
    first = new_key(owner)["deliveryKey"]["id"]
    new_key(owner)
    file = uploaded_file(owner)
    answer = sign(owner, file["id"], deliveryKeyId=first, expiresInSeconds=600).json()
    parts = urlsplit(answer["url"]).path.split("/")
    assert parts[2] == first
    options = signing.parse_options(parts[4])
    assert options.expires is not None
    assert abs(options.expires - (time.time() + 600)) < 5
    assert answer["expiresAt"].endswith("Z")


# --- Resolution ----------------------------------------------------------------------------


def test_an_image_redirects_to_its_bytes_inline_and_cacheable(owner: Actor) -> None:
    new_key(owner)
    data = png_bytes()
    file = uploaded_file(owner, data, filename="cat.png")
    url = signed_url(owner, file["id"])
    answer = resolve(url)
    assert answer.status_code == 302
    assert answer["Cache-Control"] == "public, max-age=60"  # unpinned: SERVICE_..._MAX_AGE
    fetched = get_from(answer["Location"])
    assert fetched.status_code == 200
    assert fetched.content == data
    assert fetched.headers["Content-Type"] == "image/png"
    assert fetched.headers["Content-Disposition"].startswith('inline; filename="cat.png"')
    assert fetched.headers["Cache-Control"] == "public, max-age=3600"
    # HEAD answers the same redirect; no Authorization anywhere.
    assert resolve(url, "head")["Location"] == answer["Location"]


def test_the_same_url_gives_the_same_location_within_the_window(owner: Actor) -> None:
    new_key(owner)
    file = uploaded_file(owner)
    url = signed_url(owner, file["id"])
    first = resolve(url)["Location"]
    time.sleep(1.1)  # a presigned URL signed "now" would differ by its X-Amz-Date
    assert resolve(url)["Location"] == first
    signed_at = parse_qs(urlsplit(first).query)["X-Amz-Date"][0]
    assert signed_at.endswith("0000Z")  # the hour's start: the default window is 3600 s


def test_html_and_svg_are_attachments(owner: Actor) -> None:
    new_key(owner)
    for data, name, ctype in [
        (b"<html><script>alert(1)</script></html>", "x.html", "text/html"),
        (b'<svg xmlns="http://www.w3.org/2000/svg"/>', "x.svg", "image/svg+xml"),
    ]:
        file = uploaded_file(owner, data, filename=name, contentType=ctype)
        fetched = get_from(resolve(signed_url(owner, file["id"]))["Location"])
        assert fetched.content == data
        assert fetched.headers["Content-Disposition"].startswith("attachment;")


def test_a_pinned_version_stays_while_the_unpinned_url_follows_a_replace(owner: Actor) -> None:
    new_key(owner)
    first, second = encode(stripes((30, 10)), "PNG"), encode(stripes((60, 20)), "PNG")
    file = uploaded_file(owner, first)
    pinned = signed_url(owner, file["id"], version=1)
    current = signed_url(owner, file["id"])
    started = owner.post(
        f"/v1/files/{file['id']}/replace", {"contentType": "image/png", "size": len(second)}
    ).json()
    assert put_to(started["upload"], second).status_code == 200
    assert owner.post(f"/v1/files/{file['id']}/replace/complete").status_code == 200
    pinned_answer = resolve(pinned)
    assert pinned_answer["Cache-Control"] == "public, max-age=3600"
    fetched = get_from(pinned_answer["Location"])
    assert fetched.content == first
    assert fetched.headers["Cache-Control"] == "public, max-age=3600, immutable"
    assert get_from(resolve(current)["Location"]).content == second


def test_refusals_use_the_error_body(owner: Actor, sibling: Actor) -> None:
    key = new_key(owner)
    file = uploaded_file(owner)
    url = signed_url(owner, file["id"], expiresInSeconds=60)
    path = urlsplit(url).path
    head, options, sig = path.rsplit("/", 2)
    forged = f"{head}/{options}/{sig[:-2]}AA"
    widened = f"{head}/{options.replace('expires=', 'width=10,expires=')}/{sig}"
    unicode = f"{head}/{options}/%C3%A9%F0%9F%94%91"  # any character may arrive in a path
    for target in (forged, widened, unicode, path.replace(key["deliveryKey"]["id"], "dk_x")):
        refused = resolve(target)
        assert refused.status_code == 403
        assert error_code(refused) == "INVALID_SIGNATURE"
        assert refused["Cache-Control"] == "no-store"
    # Another tenant's file under this project's key: not found.
    theirs = uploaded_file(sibling)
    other_path = path.replace(file["id"], theirs["id"])
    secret = key["secret"]
    other = signing.delivery_path(secret, key["deliveryKey"]["id"], theirs["id"], signing.Options())
    assert resolve(other_path).status_code == 403  # the signature covers the file id
    assert error_code(resolve(other)) == "FILE_NOT_FOUND"
    # Deleted: not found.
    assert owner.delete(f"/v1/files/{file['id']}").status_code == 200
    gone = resolve(url)
    assert (gone.status_code, error_code(gone)) == (404, "FILE_NOT_FOUND")


def test_an_expired_url_is_refused(owner: Actor) -> None:
    key = new_key(owner)
    file = uploaded_file(owner)
    past = signing.delivery_path(
        key["secret"],
        key["deliveryKey"]["id"],
        file["id"],
        signing.Options(expires=int(time.time()) - 1),
    )
    refused = resolve(past)
    assert (refused.status_code, error_code(refused)) == (403, "URL_EXPIRED")


def test_a_revoked_keys_urls_stop_at_once(owner: Actor) -> None:
    key = new_key(owner)
    file = uploaded_file(owner)
    url = signed_url(owner, file["id"])
    assert resolve(url).status_code == 302
    owner.delete(f"/v1/delivery-keys/{key['deliveryKey']['id']}")
    refused = resolve(url)
    assert (refused.status_code, error_code(refused)) == (403, "INVALID_SIGNATURE")


def test_each_redirect_counts_as_bandwidth(owner: Actor) -> None:
    new_key(owner)
    data = png_bytes()
    file = uploaded_file(owner, data)
    url = signed_url(owner, file["id"])
    resolve(url)
    resolve(url)
    # Counted in Redis by the redirect, in the day's row once folded (a beat task).
    bandwidth_fold()
    usage = BandwidthUsage.objects.get(project=owner.project)
    assert (usage.bytes, usage.downloads) == (2 * len(data), 2)
    assert owner.get("/v1/usage").json()["data"]["bandwidth"]["bytes"] == 2 * len(data)
    resolve(url)
    bandwidth_fold()
    bandwidth_fold()  # nothing left to add
    usage.refresh_from_db()
    assert (usage.bytes, usage.downloads) == (3 * len(data), 3)


@override_settings(SERVICE_DELIVERY_RATE_PER_MINUTE=2)
def test_the_projects_budget_answers_429(owner: Actor) -> None:
    new_key(owner)
    file = uploaded_file(owner)
    url = signed_url(owner, file["id"])
    within_one_window(5)
    answers = [resolve(url) for _ in range(5)]
    refused = [a for a in answers if a.status_code == 429]
    assert refused, [a.status_code for a in answers]
    assert error_code(refused[0]) == "RATE_LIMITED"
    assert int(refused[0]["Retry-After"]) >= 1
    # Only the redirects count as bandwidth, not the refused resolutions.
    bandwidth_fold()
    usage = BandwidthUsage.objects.get(project=owner.project)
    assert usage.downloads == len(answers) - len(refused)


@override_settings(
    REDIS_URL="redis://127.0.0.1:1/0",
    SERVICE_DELIVERY_RATE_PER_MINUTE=2,
    SERVICE_BANDWIDTH_BATCH_REDIRECTS=1,
)
def test_with_redis_down_redirects_pass_and_their_bytes_reach_the_rows(
    owner: Actor, caplog: pytest.LogCaptureFixture
) -> None:
    new_key(owner)
    data = png_bytes()
    url = signed_url(owner, uploaded_file(owner, data)["id"])
    throttling.reset_client()
    bandwidth_counts.client.cache_clear()
    try:
        # No budget can be counted: resolutions go through, as API keys' requests do.
        assert [resolve(url).status_code for _ in range(3)] == [302, 302, 302]
    finally:
        throttling.reset_client()
        bandwidth_counts.client.cache_clear()
    usage = BandwidthUsage.objects.get(project=owner.project)
    assert (usage.bytes, usage.downloads) == (3 * len(data), 3)
    assert any("Redis unavailable" in record.getMessage() for record in caplog.records)


# --- Images on demand ----------------------------------------------------------------------


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0)
def test_a_new_size_is_made_on_demand_as_transform_makes_it(owner: Actor) -> None:
    new_key(owner)
    file = image(owner)
    url = signed_url(owner, file["id"], transform={"width": 120, "height": 40})
    waiting = resolve(url)
    assert waiting.status_code == 307  # made by a worker; the browser asks again
    assert waiting["Cache-Control"] == "no-store"
    assert waiting["Location"].startswith(urlsplit(url).path + "?waited=")
    # The same row POST …/transform makes: same label, one variant for both requests.
    assert resolve(url).status_code == 307
    label = "w120_h40_cover_webp_q80"
    variants = Variant.objects.filter(file_id=file["id"], label=label)
    assert variants.count() == 1
    asked = owner.post(f"/v1/files/{file['id']}/transform", {"width": 120, "height": 40})
    assert asked.json()["data"]["id"] == variants.get().id
    process_pending()
    # The waiting request is sent back to the URL as signed, whose 302 caches keep.
    back = resolve(waiting["Location"])
    assert (back.status_code, back["Location"]) == (307, urlsplit(url).path)
    assert back["Cache-Control"] == "no-store"
    ready = resolve(url)
    assert ready.status_code == 302
    assert ready["Cache-Control"] == "public, max-age=60"
    fetched = get_from(ready["Location"])
    assert fetched.headers["Content-Type"] == "image/webp"
    assert fetched.headers["Cache-Control"] == "public, max-age=3600, immutable"
    assert fetched.headers["Content-Disposition"].startswith("inline;")
    assert fetched.content[8:12] == b"WEBP"


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0)
def test_a_ready_variant_resolves_in_one_lookup(
    owner: Actor, django_assert_num_queries: Any
) -> None:
    """The key, the file and the variant are read by one statement, the only one: the
    bandwidth is counted in Redis. Also for format auto when Accept names a format."""
    new_key(owner)
    file = image(owner)
    url = signed_url(owner, file["id"], transform={"width": 30})
    auto = signed_url(owner, file["id"], transform={"width": 30, "format": "auto"})
    resolve(url)
    resolve(auto, Accept="image/webp")
    process_pending()
    with django_assert_num_queries(1):
        answer = resolve(url)
    assert answer.status_code == 302
    with django_assert_num_queries(1):
        answer = resolve(auto, Accept="image/webp,*/*")
    assert (answer.status_code, answer["Vary"]) == (302, "Accept")
    assert get_from(answer["Location"]).headers["Content-Type"] == "image/webp"


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0, SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS=0)
def test_a_variant_not_ready_in_time_answers_503(owner: Actor) -> None:
    new_key(owner)
    file = image(owner)
    refused = resolve(signed_url(owner, file["id"], transform={"width": 50}))
    assert (refused.status_code, error_code(refused)) == (503, "VARIANT_NOT_READY")
    assert refused["Retry-After"] == "1"


@override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0)
def test_format_auto_follows_accept_and_varies_on_it(owner: Actor) -> None:
    new_key(owner)
    file = image(owner)
    url = signed_url(owner, file["id"], transform={"width": 60, "format": "auto"})
    for accept in ("image/avif,image/webp,*/*", "image/webp,*/*", "*/*"):
        resolve(url, Accept=accept)
    process_pending()
    labels = set(Variant.objects.filter(file_id=file["id"]).values_list("label", flat=True))
    assert {"w60_cover_avif_q80", "w60_cover_webp_q80", "w60_cover_png_q80"} <= labels
    answer = resolve(url, Accept="image/webp,*/*")
    assert answer.status_code == 302
    assert answer["Vary"] == "Accept"
    assert get_from(answer["Location"]).headers["Content-Type"] == "image/webp"


def test_a_failed_variant_answers_422(owner: Actor) -> None:
    new_key(owner)
    file = image(owner)
    url = signed_url(owner, file["id"], transform={"width": 70})
    with override_settings(SERVICE_DELIVERY_TRANSFORM_HOLD_MS=0):
        assert resolve(url).status_code == 307
    Variant.objects.filter(file_id=file["id"], label="w70_cover_webp_q80").update(
        status="failed", failure_reason="broken"
    )
    refused = resolve(url)
    assert (refused.status_code, error_code(refused)) == (422, "VARIANT_FAILED")
