"""The document and the server accept the same inputs: every string a documented pattern
allows, the validator behind it accepts (and what the validator accepts, the pattern allows);
every enum a shape declares is the model's own list of values."""

from __future__ import annotations

import re
from typing import Any, get_args

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from events.models import Event
from events.shapes import EventType
from files.models import File
from files.shapes import FileStatus
from files.validation import (
    CONTENT_TYPE_PATTERN,
    FILENAME_PATTERN,
    PATH_PATTERN,
    clean_content_type,
    clean_filename,
    clean_path,
)
from uploads.models import UploadSession
from uploads.serializers import ETAG_PATTERN, _etag
from uploads.shapes import SessionStatus
from variants.imaging import FITS, FORMATS
from variants.models import Variant
from variants.shapes import Fit, Format, OutputType, VariantStatus
from webhooks.models import Delivery, Endpoint
from webhooks.network import URL_PATTERN, parse_url
from webhooks.serializers import clean_url
from webhooks.shapes import DeliveryStatus, EndpointStatus

SOME = settings(
    max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None
)


def accepts(clean: Any, value: Any) -> bool:
    try:
        clean(value)
    except serializers.ValidationError:
        return False
    return True


RULES = [
    (FILENAME_PATTERN, clean_filename, 255),
    (PATH_PATTERN, clean_path, 1024),
    (CONTENT_TYPE_PATTERN, clean_content_type, 255),
    (ETAG_PATTERN, _etag, 1026),
    (URL_PATTERN, clean_url, 2048),
]


@pytest.mark.parametrize(("pattern", "clean", "max_length"), RULES)
def test_every_string_a_documented_pattern_allows_is_accepted(
    pattern: str, clean: Any, max_length: int
) -> None:
    @SOME
    @given(st.from_regex(pattern, fullmatch=True).filter(lambda v: len(v) <= max_length))
    def check(value: str) -> None:
        assert accepts(clean, value), value

    check()


@pytest.mark.parametrize(("pattern", "clean", "max_length"), RULES)
def test_what_the_validator_accepts_the_pattern_allows(
    pattern: str, clean: Any, max_length: int
) -> None:
    compiled = re.compile(pattern)

    @SOME
    @given(st.text(max_size=40) | st.from_regex(pattern, fullmatch=True).map(lambda v: v[:-1]))
    def check(value: str) -> None:
        if accepts(clean, value) and value is not None:
            assert compiled.fullmatch(value), value

    check()


@SOME
@given(st.from_regex(URL_PATTERN, fullmatch=True).filter(lambda v: len(v) <= 2048))
def test_every_documented_webhook_url_parses_as_the_deliveries_parse_it(url: str) -> None:
    target = parse_url(url)
    assert target.host and 0 <= target.port <= 65535


@pytest.mark.parametrize(
    ("literal", "values"),
    [
        (FileStatus, File.Status.values),
        (SessionStatus, UploadSession.Status.values),
        (VariantStatus, Variant.Status.values),
        (Fit, list(FITS)),
        (Format, list(FORMATS)),
        (OutputType, [content_type for _, content_type, _ in FORMATS.values()]),
        (DeliveryStatus, Delivery.Status.values),
        (EndpointStatus, Endpoint.Status.values),
        (EventType, Event.Type.values),
    ],
)
def test_each_enum_of_the_shapes_is_the_models_list(literal: Any, values: list[str]) -> None:
    assert list(get_args(literal)) == list(values)
