from __future__ import annotations

import pytest
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from storage_service import objectstore

pytestmark = pytest.mark.e2e


def test_djangos_default_storage_is_the_service_bucket() -> None:
    """django-storages and the service's own client read and write the same bucket."""
    name = default_storage.save("django-storage-check/a.txt", ContentFile(b"abc"))
    try:
        assert objectstore.read_prefix(name, 3) == b"abc"
    finally:
        objectstore.delete([name])
