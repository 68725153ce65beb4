"""Every object any app stores has a key of one shape: the project, then a random id."""

from __future__ import annotations

import re

import pytest

from files.models import StoredObject
from tests.factories import Actor, png_bytes
from tests.helpers import uploaded_file
from tests.multipart import start_multipart
from variants.models import Variant
from variants.services import variant_process

pytestmark = pytest.mark.django_db


def test_single_multipart_and_variant_objects_share_the_key_recipe(owner: Actor) -> None:
    uploaded_file(owner, png_bytes(), filename="holiday-secret.png", contentType="image/png")
    start_multipart(owner, 20 * 1024 * 1024, filename="holiday-secret.bin", path="private")
    thumbnail = Variant.objects.get(project=owner.project)
    assert variant_process(variant_id=thumbnail.id).status == "ready"

    keys = list(StoredObject.objects.filter(project=owner.project).values_list("storage_key"))
    assert len(keys) == 3  # the upload's, the multipart's, the thumbnail's
    shape = re.compile(rf"{re.escape(owner.project.id)}/obj_[0-9a-z]{{26}}")
    for (key,) in keys:
        # Nothing of the filename or path: renames never touch the store, keys leak nothing.
        assert shape.fullmatch(key), key
    assert len({key for (key,) in keys}) == 3
