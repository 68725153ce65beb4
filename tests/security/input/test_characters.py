"""Hostile characters in filenames and paths: bidi-override and zero-width characters are
refused, and a path built to make the pattern backtrack is refused at once."""

from __future__ import annotations

import itertools
import re

import pytest
import requests

from tests.factories import Actor
from tests.security.input.hostile import (
    auth,
    post,
    refused,
    request_schema,
    send,
    upload_body,
    uploaded_file,
)

pytestmark = pytest.mark.django_db(transaction=True)

# --- Filenames free of bidi-override and zero-width characters --------------------------------

INVISIBLE = [
    "\u202e",
    "\u202a",
    "\u202d",
    "\u2066",
    "\u2069",
    "\u200b",
    "\u200d",
    "\u200e",
    "\u200f",
    "\ufeff",
    "\u2060",
    "\u061c",
]


def test_filenames_and_paths_refuse_bidi_and_zero_width_characters(api: str, actor: Actor) -> None:
    file = uploaded_file(api, actor)
    for char in INVISIBLE:
        name = f"invoice{char}gpj.exe"
        refused(post(api, actor, "/v1/files/upload", upload_body(filename=name)))
        refused(post(api, actor, "/v1/files/upload", upload_body(path=f"a/b{char}c")))
        refused(send("PATCH", api, actor, f"/v1/files/{file['id']}", {"filename": name}))
        refused(post(api, actor, f"/v1/files/{file['id']}/copy", {"filename": name}))
    # Ordinary non-ASCII names are fine.
    fine = post(api, actor, "/v1/files/upload", upload_body(filename="résumé 履歴書 😀.pdf"))
    assert fine.status_code == 201, fine.text

    pattern = request_schema(api, "UploadRequest")["properties"]["filename"]["pattern"]
    for char in INVISIBLE:
        assert not re.fullmatch(pattern, f"a{char}b")
    assert re.fullmatch(pattern, "résumé 履歴書 😀.pdf")


def test_paths_built_to_make_the_pattern_backtrack_are_refused_at_once(
    api: str, actor: Actor
) -> None:
    """Segments like ".ab" in a path that fails only at its end (a trailing space, a last
    ".." segment): a segment pattern that matched ".ab" in two ways tried 2**n splits before
    refusing it, hours of a worker's CPU at 40 segments (160 characters). Each entry point
    answers 400 within the client's 10 s; the segments alone are a valid folder."""
    for unit, tail in itertools.product([".ab", ". ab", "..ab", ".a b"], [" ", "/.."]):
        valid = "/".join([unit] * 60)
        hostile = valid + tail
        for response in [
            requests.get(
                f"{api}/v1/files", params={"path": hostile}, headers=auth(actor), timeout=10
            ),
            requests.post(
                f"{api}/v1/files/upload",
                json=upload_body(path=hostile),
                headers=auth(actor),
                timeout=10,
            ),
            requests.post(
                f"{api}/v1/folders/move",
                json={"from": hostile, "to": "elsewhere"},
                headers=auth(actor),
                timeout=10,
            ),
        ]:
            refused(response)
        fine = requests.post(
            f"{api}/v1/files/upload",
            json=upload_body(path=valid),
            headers=auth(actor),
            timeout=10,
        )
        assert fine.status_code == 201, fine.text
        assert fine.json()["file"]["path"] == valid
    # The document's pattern, which generated clients and fuzzers match with, is the same one.
    pattern = request_schema(api, "UploadRequest")["properties"]["path"]["pattern"]
    assert re.fullmatch(pattern, "/".join([".ab"] * 60))
    assert not re.fullmatch(pattern, "/".join([".ab"] * 60) + " ")
