"""The typed hooks through which upstream apps announce changes to downstream ones."""

from __future__ import annotations

import pytest

from accounts.usage import project_storage
from files import hooks as file_hooks
from files.usage import project_stored
from storage_service.hooks import hook
from uploads.services import multipart_complete_refusal
from variants.services import thumbnail_schedule, variants_discard_outputs


def test_receivers_run_once_each_in_registration_order_and_their_errors_propagate() -> None:
    @hook
    def happened(*, what: str) -> str:
        """Something happened."""
        raise AssertionError("a prototype is never called")

    calls: list[str] = []

    def first(*, what: str) -> str:
        calls.append(f"first {what}")
        return "a"

    def second(*, what: str) -> str:
        calls.append(f"second {what}")
        return "b"

    happened.register(first)
    happened.register(second)
    happened.register(first)  # a second ready() must not double the work
    assert happened.send(what="x") == ["a", "b"]
    assert calls == ["first x", "second x"]
    assert happened.__doc__ == "Something happened."

    def broken(*, what: str) -> str:
        raise ValueError(what)

    happened.register(broken)
    with pytest.raises(ValueError, match="y"):
        happened.send(what="y")


def test_the_apps_built_on_files_are_registered_at_start_up() -> None:
    # Django ran every AppConfig.ready before the suite; no app imports the ones below it.
    assert project_storage._receivers == [project_stored]
    assert file_hooks.version_published._receivers == [thumbnail_schedule]
    assert file_hooks.file_purged._receivers == [variants_discard_outputs]
    assert file_hooks.single_complete_refusal._receivers == [multipart_complete_refusal]
