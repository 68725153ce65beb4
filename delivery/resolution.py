"""What a delivery URL resolves to: checked, counted, and turned into a redirect to the store.

The view (delivery/resolve.py) only speaks HTTP; everything here raises ApiError for a
refusal, and returns the redirect (or, while an on-demand variant is being made, the wait).
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import PurePosixPath

from django.conf import settings

from accounts import bandwidth as bandwidth_counts
from accounts.models import Project
from accounts.tenancy import Tenant
from accounts.throttling import Budget, count_request
from delivery import signing
from delivery.remembered import remembered_rows
from delivery.secret import secret_of
from delivery.selectors import (
    FileRow,
    KeyRow,
    ResolutionRows,
    VariantRow,
    variant_row,
)
from delivery.serializers import DELIVERY_FORMATS
from files.models import File, FileVersion
from storage_service import objectstore
from storage_service.errors import (
    FileNotFound,
    InvalidSignature,
    RateLimited,
    UrlExpired,
    ValidationError,
    VariantFailed,
    VariantNotReady,
)
from storage_service.serving import web_threads
from variants import readiness, slots
from variants.imaging import FITS, FORMATS, MAX_DIMENSION, Params
from variants.models import Variant
from variants.services import variant_transform

# Types a browser may render from the store's origin without risk to it: raster images,
# audio, video, PDF and plain text. Everything else (HTML, SVG, XML, scripts, unknown) is
# served as an attachment, so an uploaded page can never run in a browser.
INLINE_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/avif",
        "image/bmp",
        "image/tiff",
        "image/x-icon",
        "image/vnd.microsoft.icon",
        "application/pdf",
        "text/plain",
    }
)
# The longest a presigned URL may live at the store (SigV4's limit).
MAX_PRESIGN_SECONDS = 7 * 24 * 3600
VStatus = Variant.Status
# How many of this process's request threads may wait for variants at once: all but one, so
# that a burst of first requests never holds every thread and other requests (any tenant's
# GET, a ready variant's 302) always find one (storage_service/serving.py: WEB_THREADS).
WAITING_PLACES = max(1, web_threads() - 1)
_waiting_places = threading.BoundedSemaphore(WAITING_PLACES)
# And how many first requests of one project may wait at once, over every API process
# (SERVICE_DELIVERY_PROJECT_WAITING): one project's burst of new sizes never takes every
# waiting place, so another project's first request still waits for its image. A place whose
# process died lapses after the longest hold and this margin.
PROJECT_WAITERS = slots.ProjectCap("delivery-waiters")
WAITER_LAPSE_MARGIN_SECONDS = 30


def renders_safely(content_type: str | None) -> bool:
    if not content_type:
        return False
    base = content_type.split(";", 1)[0].strip().lower()
    return base in INLINE_TYPES or base.startswith(("audio/", "video/"))


@dataclass(frozen=True)
class Redirect:
    location: str
    max_age: int  # of the 302 itself
    vary_accept: bool


@dataclass(frozen=True)
class Wait:
    """Ask again: the same URL having waited ``waited_ms`` while the variant is being made;
    or, once it is ready (``waited_ms`` None), the URL as signed, whose 302 caches keep under
    the URL the page names rather than under a ``?waited=`` one."""

    waited_ms: int | None


@dataclass(frozen=True)
class Target:
    storage_key: str
    content_type: str
    sniffed_type: str | None
    size: int
    filename: str
    immutable: bool  # a pinned version or a variant: these bytes never change


def delivery_resolve(
    *,
    key_id: str,
    file_id: str,
    options_text: str,
    signature: str,
    accept: str,
    waited_ms: int | None,
) -> Redirect | Wait:
    """Resolve one delivery URL.

    1. The key (active) and the signature over the path; then the options' shape and the
       expiry. Nothing is trusted before the signature matches.
    2. The project's resolution budget (per minute, in Redis, through this process's
       lease of it: accounts/throttling.py).
    3. The file (the key's tenant's, visible, uploaded), then the target: the current
       version, the pinned one, or the transform's variant (made on demand, waited for).
    4. The store's URL, signed at the window's start so the same URL answers the same
       Location for the whole window; the target's size counted as bandwidth (in this
       process's batch: accounts/bandwidth.py).
    """
    try:
        options = signing.parse_options(options_text)
    except signing.Malformed:
        options = None
    rows = remembered_rows(
        key_id=key_id,
        file_id=file_id,
        version=options.version if options else None,
        label=_label_known_before_the_file(options, accept),
    )
    if rows is None or not signing.signature_matches(
        secret_of(key_id=rows.key.id, salt=rows.key.salt),
        key_id,
        file_id,
        options_text,
        signature,
    ):
        raise InvalidSignature("The URL's signature does not match, or its key was revoked.")
    if options is None:
        raise InvalidSignature("The URL's options are not in the signed form.")
    now = time.time()
    if options.expires is not None and now >= options.expires:
        raise UrlExpired("The URL has expired.", details={"expiredAt": _iso(options.expires)})
    key = rows.key
    # The staff console's previews are not the customer's traffic (delivery/console.py):
    # they count against neither the project's budget nor its bandwidth.
    if not key.console:
        _within_budget(key)
    ready = _ready_target(rows, options, waited_ms)
    if ready is not None:
        return _counted_redirect(key, ready, options, now)
    file = rows.file
    if file is None or file.status == File.Status.DELETED:
        raise FileNotFound("No such file.")
    if file.status != File.Status.UPLOADED:
        raise FileNotFound("The file has no uploaded bytes.")
    if options.has_transform:
        started = time.monotonic()
        variant = rows.variant or _variant(key, file, options, accept)
        variant = _wait_for(variant, waited_ms or 0, project_id=key.project_id)
        if variant.status == VStatus.READY and waited_ms is not None:
            return Wait(waited_ms=None)
        if variant.status != VStatus.READY:
            waited_ms = (waited_ms or 0) + int((time.monotonic() - started) * 1000)
            if waited_ms >= settings.SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS * 1000:
                raise VariantNotReady(
                    "The image is still being made; retry shortly.",
                    status=503,
                    details={"status": variant.status},
                )
            return Wait(waited_ms=waited_ms)
        target = _variant_target(file, variant)
    else:
        target = _version_target(file, options.version)
    return _counted_redirect(key, target, options, now)


def _ready_target(
    rows: ResolutionRows, options: signing.Options, waited_ms: int | None
) -> Target | None:
    """The target when the one statement read it all and the answer is a redirect at once:
    an uploaded file's current version, or a ready variant asked for without a wait. None
    for anything else (refusals, pinned versions, variants to make or wait for), which the
    general path answers."""
    file = rows.file
    if file is None or file.status != File.Status.UPLOADED:
        return None
    if options.has_transform:
        variant = rows.variant
        if variant is None or variant.status != VStatus.READY or waited_ms is not None:
            return None
        return _variant_target(file, variant)
    if options.version is not None and options.version != file.version:
        return None
    return _version_target(file, options.version)


def _redirect(target: Target, options: signing.Options, now: float) -> Redirect:
    window = settings.SERVICE_DELIVERY_WINDOW_SECONDS
    window_start = int(now // window) * window
    location = objectstore.signed_get_url(
        key=target.storage_key,
        signed_at=datetime.fromtimestamp(window_start, UTC),
        expires_in=min(2 * window, MAX_PRESIGN_SECONDS),
        response_headers=_response_headers(target, window),
    )
    # The Location lives until window_start + 2 windows, so a copy of this answer kept for
    # up to one window still leads somewhere valid; an unpinned URL is kept briefly so a
    # replace shows; never beyond the URL's own expiry.
    max_age = window
    if options.version is None:
        max_age = min(max_age, settings.SERVICE_DELIVERY_CURRENT_MAX_AGE)
    if options.expires is not None:
        max_age = min(max_age, int(options.expires - now))
    return Redirect(
        location=location, max_age=max(0, max_age), vary_accept=options.format == "auto"
    )


def _iso(unix: int) -> str:
    return datetime.fromtimestamp(unix, UTC).isoformat().replace("+00:00", "Z")


def _label_known_before_the_file(options: signing.Options | None, accept: str) -> str | None:
    """The transform's variant label when it does not depend on the file (``format: auto``
    picks JPEG or PNG by the source's type only when Accept lists neither AVIF nor WebP),
    so the variant is read in the statement that reads the key and the file; None otherwise,
    and then the variant is read once the file is known (an invalid transform is refused
    there too, after the file's checks, as before)."""
    if options is None or not options.has_transform:
        return None
    if options.format == "auto" and auto_format(accept, None) not in ("avif", "webp"):
        return None
    try:
        return transform_params(options, accept=accept, source_type=None).label
    except ValidationError:
        return None


def _within_budget(key: KeyRow) -> None:
    """Count one resolution against the key's project's budget for this minute (a fixed
    window, as the API keys' limits), from this process's lease of it when it holds one, so
    most resolutions ask Redis nothing; a budget is still never exceeded, by any number of
    processes. Redis down: the resolution goes through, as the API keys' limiter lets
    requests through."""
    limit = settings.SERVICE_DELIVERY_RATE_PER_MINUTE
    if limit <= 0:
        return
    wait = count_request([Budget(f"delivery:{key.project_id}", "d", limit)])
    if wait is not None:
        raise RateLimited(
            f"The project's delivery URLs resolved more than {limit} times this minute.",
            retry_after=max(1, int(wait)),
        )


def _counted_redirect(
    key: KeyRow, target: Target, options: signing.Options, now: float
) -> Redirect:
    """The redirect to ``target``, its bytes added to the project's bandwidth (not for the
    console's previews): in this process's batch, sent to Redis by the batch (a round trip
    every so many redirects), written to PostgreSQL when Redis is down."""
    redirect = _redirect(target, options, now)
    if not key.console:
        bandwidth_counts.count(project_id=key.project_id, mode=key.mode, size=target.size)
    return redirect


def auto_format(accept: str, source_type: str | None) -> str:
    """AVIF, else WebP, as the browser lists them; else JPEG, or PNG for a source whose format
    can carry transparency (PNG, GIF, WebP, AVIF, TIFF), so an alpha channel is kept."""
    listed = accept.lower()
    if "image/avif" in listed:
        return "avif"
    if "image/webp" in listed:
        return "webp"
    return "jpeg" if source_type == "image/jpeg" else "png"


def transform_params(options: signing.Options, *, accept: str, source_type: str | None) -> Params:
    """The variant parameters a URL's transform names (POST …/transform's defaults for the
    omitted ones); signed by the key's holder, but checked as that endpoint checks them."""
    problems: dict[str, list[str]] = {}
    for name in ("width", "height"):
        value = getattr(options, name)
        if value is not None and not 1 <= value <= MAX_DIMENSION:
            problems[name] = [f"Must be from 1 to {MAX_DIMENSION}."]
    if options.width is None and options.height is None:
        problems["width"] = ["Give width or height (or both)."]
    if options.fit is not None and options.fit not in FITS:
        problems["fit"] = [f"Must be one of: {', '.join(FITS)}."]
    if options.format is not None and options.format not in DELIVERY_FORMATS:
        problems["format"] = [f"Must be one of: {', '.join(DELIVERY_FORMATS)}."]
    if options.quality is not None and not 1 <= options.quality <= 100:
        problems["quality"] = ["Must be from 1 to 100."]
    if problems:
        raise ValidationError("The URL's transform is invalid.", details=problems)
    fmt = options.format or "webp"
    if fmt == "auto":
        fmt = auto_format(accept, source_type)
    return Params(
        width=options.width,
        height=options.height,
        fit=options.fit or "cover",
        format=fmt,
        quality=options.quality or 80,
    )


def _variant(key: KeyRow, file: FileRow, options: signing.Options, accept: str) -> VariantRow:
    """The transform's variant: found, or asked for exactly as POST …/transform asks (the
    same label, row, events and caps; one variant when first requests race)."""
    params = transform_params(options, accept=accept, source_type=file.sniffed_type)
    version = options.version or file.version
    found = (
        Variant.objects.select_related("output_object")
        .filter(file_id=file.id, version=version, label=params.label)
        .first()
    )
    if found is not None:
        return variant_row(found)
    tenant = Tenant(project=Project.objects.get(id=key.project_id), mode=key.mode)
    made = variant_transform(tenant=tenant, file_id=file.id, params=params, version=options.version)
    return variant_row(made)


def _wait_for(variant: VariantRow, waited_ms: int, *, project_id: str) -> VariantRow:
    """Wait for the variant to end, for at most one hold (SERVICE_DELIVERY_TRANSFORM_HOLD_MS)
    and never past the total wait, woken by the worker's message the moment it ends
    (variants/readiness.py): the request thread is held briefly, then the browser is sent
    back to ask again (see delivery/resolve.py).

    Only WAITING_PLACES requests of this process, and SERVICE_DELIVERY_PROJECT_WAITING of the
    project over every process, wait at once: one of a process's request threads is always
    left for every other request, and one project's burst of first requests leaves the other
    projects' first requests room to wait. A request that finds either full is answered at
    once, 503 VARIANT_NOT_READY with Retry-After; its variant is still made, for the next
    request of the URL.
    """
    if variant.status not in (VStatus.PENDING, VStatus.PROCESSING):
        return _ended(variant)
    total_left = settings.SERVICE_DELIVERY_TRANSFORM_WAIT_SECONDS * 1000 - waited_ms
    hold = max(0, min(settings.SERVICE_DELIVERY_TRANSFORM_HOLD_MS, total_left)) / 1000
    if hold <= 0:
        return variant
    if not _waiting_places.acquire(blocking=False):
        raise VariantNotReady(
            "The image is being made and this server is waiting for as many as it may; "
            "retry shortly.",
            status=503,
            details={"status": variant.status},
        )
    try:
        with PROJECT_WAITERS.held(
            project_id,
            secrets.token_hex(8),
            cap=settings.SERVICE_DELIVERY_PROJECT_WAITING,
            lapse_seconds=int(hold) + 1 + WAITER_LAPSE_MARGIN_SECONDS,
        ) as place:
            if not place:
                raise VariantNotReady(
                    "The image is being made, and as many of the project's requests as may "
                    "wait are waiting for theirs; retry shortly.",
                    status=503,
                    details={"status": variant.status},
                )
            return _ended(_wait_once(variant, hold))
    finally:
        _waiting_places.release()


def _wait_once(variant: VariantRow, hold: float) -> VariantRow:
    latest = variant

    def done() -> bool:
        nonlocal latest
        latest = variant_row(Variant.objects.select_related("output_object").get(id=variant.id))
        return latest.status not in (VStatus.PENDING, VStatus.PROCESSING)

    readiness.wait_until_done(variant.id, done, hold)
    return latest


def _ended(variant: VariantRow) -> VariantRow:
    if variant.status == VStatus.FAILED:
        raise VariantFailed(
            f"The image could not be made: {variant.failure_reason}",
            details={"variantId": variant.id, "reason": variant.failure_reason},
        )
    return variant


def _variant_target(file: FileRow, variant: VariantRow) -> Target:
    assert variant.storage_key is not None  # ready
    _, content_type, extension = FORMATS[variant.format]
    stem = PurePosixPath(file.filename).stem or "image"
    return Target(
        storage_key=variant.storage_key,
        content_type=content_type,
        sniffed_type=content_type,
        size=variant.size or 0,
        filename=f"{stem}_{variant.label}.{extension}",
        immutable=True,
    )


def _version_target(file: FileRow, version: int | None) -> Target:
    if version is None or version == file.version:
        return Target(
            storage_key=file.storage_key,
            content_type=file.content_type,
            sniffed_type=file.sniffed_type,
            size=file.size,
            filename=file.filename,
            immutable=version is not None,
        )
    published = (
        FileVersion.objects.select_related("stored_object")
        .filter(file_id=file.id, version=version)
        .first()
    )
    if published is None or published.stored_object.purged_at is not None:
        raise FileNotFound(f"The file has no version {version}.")
    return Target(
        storage_key=published.stored_object.storage_key,
        content_type=published.content_type,
        sniffed_type=published.stored_object.sniffed_type,
        size=published.size,
        filename=file.filename,
        immutable=True,
    )


def _response_headers(target: Target, window: int) -> dict[str, str]:
    """The store's answer: its type, inline only when both the declared and the sniffed
    type render safely, and cacheable publicly for one window (the Location's life is two)."""
    inline = renders_safely(target.content_type) and (
        target.sniffed_type is None or renders_safely(target.sniffed_type)
    )
    disposition = objectstore.content_disposition(target.filename)
    if inline:
        disposition = "inline" + disposition.removeprefix("attachment")
    cache_control = f"public, max-age={window}" + (", immutable" if target.immutable else "")
    return {
        "response-cache-control": cache_control,
        "response-content-disposition": disposition,
        "response-content-encoding": objectstore.DOWNLOAD_CONTENT_ENCODING,
        "response-content-language": objectstore.DOWNLOAD_CONTENT_LANGUAGE,
        "response-content-type": target.content_type,
    }
