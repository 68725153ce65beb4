"""The staff console in a real browser (tests/js/browser/console.browser.mjs clicks; this
module prepares the staff user, a project with folders and an image in two versions, and
checks what the clicks reported and changed)."""

from __future__ import annotations

import json
import shutil
from datetime import timedelta

from django.contrib.auth.models import Permission, User
from django.utils import timezone

from accounts.models import ApiKey, BandwidthUsage
from delivery.models import DeliveryKey
from tests.factories import Actor, image_bytes, make_actor
from tests.helpers import put_to, uploaded_file
from tests.js.browser.conftest import run_browser
from tests.js.conftest import ROOT
from uploads.models import UploadToken
from variants.models import Variant
from variants.services import variant_process

ARTIFACTS = ROOT / "var" / "test-artifacts" / "console"


def test_staff_use_the_storage_console(api_base: str, actor: Actor) -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    User.objects.create_superuser("staff", "staff@example.test", "console-pw")
    # A staff user with every view permission, granted this project only.
    granted = User.objects.create_user(
        "granted", "granted@example.test", "granted-pw", is_staff=True
    )
    granted.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    actor.project.staff_users.add(granted)
    other = make_actor("elsewhere", organization="other")
    uploaded_file(other, b"theirs", filename="elsewhere.txt", contentType="text/plain")
    first = image_bytes("PNG", (64, 40))
    image = uploaded_file(
        actor, first, filename="sunset.png", contentType="image/png", path="photos/2026"
    )
    second = image_bytes("PNG", (120, 80))  # the current version; the browser downloads v1
    started = actor.post(
        f"/v1/files/{image['id']}/replace", {"contentType": "image/png", "size": len(second)}
    ).json()
    assert put_to(started["upload"], second).status_code == 200
    assert actor.post(f"/v1/files/{image['id']}/replace/complete").status_code == 200
    uploaded_file(actor, b"notes", filename="notes.txt", contentType="text/plain")
    # Long unbroken values a client may send: every page must still fit 1366 px.
    uploaded_file(
        actor,
        b"long",
        filename="N" * 250 + ".txt",
        contentType="text/plain",
        path="long/" + "P" * 200,
        metadata={"note": "M" * 500},
    )
    # The image's thumbnails, as a worker makes them: the browser shows the ready one.
    for variant_id in Variant.objects.filter(status="pending").values_list("id", flat=True):
        variant_process(variant_id=variant_id)
    today = timezone.now().date()
    for days in range(0, 30, 3):
        BandwidthUsage.objects.create(
            project=actor.project,
            mode="test",
            day=today - timedelta(days=days),
            bytes=1000 * (30 - days),
            downloads=1,
        )

    run = run_browser(
        "console.browser.mjs",
        env={
            "API_URL": api_base,
            "ADMIN_USER": "staff",
            "ADMIN_PASSWORD": "console-pw",
            "PROJECT_ID": actor.project.id,
            "OTHER_PROJECT_ID": other.project.id,
            "GRANTED_USER": "granted",
            "GRANTED_PASSWORD": "granted-pw",
        },
        artifacts=ARTIFACTS,
        timeout=480,
    )
    assert run.returncode == 0, run.output
    assert run.counts.get("fail") == 0 and run.counts.get("pass") == 9, run.output

    report = json.loads((ARTIFACTS / "console-report.json").read_text())
    assert report["naturalWidth"] == 120  # the current version's preview
    # Both through delivery URLs of the console's own key, which the customer never sees.
    for src in (report["previewSrc"], report["thumbnailSrc"]):
        signer = DeliveryKey.objects.get(id=src.split("/d/")[1].split("/")[0])
        assert signer.console and signer.project == actor.project
    assert "/width=256,height=256,fit=inside,format=webp" in report["thumbnailSrc"]
    assert report["grantedProjects"] == 1
    assert report["downloaded"] == len(first) and report["suggested"] == "sunset.png"
    key = ApiKey.objects.get(project=actor.project, name="console-browser")
    assert key.prefix == report["keyPrefix"] and key.revoked_at is not None
    delivery_key = DeliveryKey.objects.get(id=report["delivery"])
    assert delivery_key.project == actor.project and delivery_key.revoked_at is not None
    token = UploadToken.objects.get(id=report["upload-token"])
    assert token.project == actor.project and token.revoked_at is not None
    assert all(width <= 1366 for width in report["widths"].values()), report["widths"]
    assert len(report["widths"]) >= 10
    shots = ("01-index", "02-project", "04-browse-folder", "05-file", "07-key", "08-delivery")
    for name in (*shots, "10-upload-token", "11-granted-projects", "13-granted-other-404"):
        assert any(ARTIFACTS.glob(f"console-{name}*.png")), name
