"""The browser-upload example in headless Chromium: single and parallel-part uploads with
progress, an abort and resume, the store's refusal shown to the page, and the key never in the
browser (tests/js/browser/upload.browser.mjs holds the steps)."""

from __future__ import annotations

from pathlib import Path

from files.models import File
from tests.factories import Actor
from tests.js.browser.conftest import run_browser

MIB = 1024 * 1024


def test_a_page_uploads_straight_to_the_store(
    example: str, api_base: str, actor: Actor, artifacts: Path
) -> None:
    run = run_browser(
        "upload.browser.mjs",
        env={"EXAMPLE_URL": example, "API_KEY": actor.key.raw_key, "API_URL": api_base},
        artifacts=artifacts,
        timeout=240,
    )
    assert run.returncode == 0, run.output
    assert run.counts.get("fail") == 0 and run.counts.get("pass") == 5, run.output
    # What the service holds after the page's uploads: each completed with its exact size.
    sizes = sorted(
        File.objects.filter(project=actor.project, status="uploaded").values_list("size", flat=True)
    )
    assert sizes == sorted([39, 20 * MIB, 20 * MIB]), sizes
    for name in (
        "upload-1-chosen",
        "upload-2-small-done",
        "upload-3-parts-done",
        "upload-4-refused",
    ):
        assert (artifacts / f"{name}.png").stat().st_size > 1000, name
