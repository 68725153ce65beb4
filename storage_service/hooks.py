"""Typed hooks: how an upstream app lets downstream apps react without importing them.

Apps depend in one direction only: accounts <- events <- jobs <- {files, webhooks};
files <- {uploads, variants} (checked by import-linter, ``make lint``). When something
upstream must make a downstream app act -- files publishes a version and variants makes its
thumbnail -- the upstream app declares a hook and sends it; the downstream app registers its
receiver in its ``AppConfig.ready``.

A hook is declared by its prototype, a function whose signature every receiver must have::

    @hook
    def version_published(*, file: File, stored: StoredObject, version: int) -> None:
        '''What it means, when it is sent, what a receiver may do.'''

mypy then checks both sides: ``version_published.register(receiver)`` against the prototype's
parameters, and ``version_published.send(file=..., ...)`` against the same. (A Django signal
would do the same job untyped: any keyword arguments, any receiver.)

Receivers run in registration order, in the sender's thread and transaction; an exception
propagates to the sender, so a receiver's failure rolls back the change that announced it,
exactly as a direct call would.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")


class Hook(Generic[P, R]):
    def __init__(self, prototype: Callable[P, R]) -> None:
        self.name = f"{prototype.__module__}.{prototype.__qualname__}"
        self.__doc__ = prototype.__doc__
        self._receivers: list[Callable[P, R]] = []

    def register(self, receiver: Callable[P, R]) -> Callable[P, R]:
        """Add a receiver (once: registering it again changes nothing). Returns it, so this
        can decorate the receiver's definition."""
        if receiver not in self._receivers:
            self._receivers.append(receiver)
        return receiver

    def send(self, *args: P.args, **kwargs: P.kwargs) -> list[R]:
        """Call every receiver; their results, in registration order."""
        return [receiver(*args, **kwargs) for receiver in self._receivers]

    def __repr__(self) -> str:
        return f"<Hook {self.name}: {len(self._receivers)} receiver(s)>"


def hook(prototype: Callable[P, R]) -> Hook[P, R]:
    """Declare a hook from its prototype (see the module's docstring)."""
    return Hook(prototype)
