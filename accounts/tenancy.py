"""Tenants: a project and a mode (test or live), the scope of every query.

Test and live data are separate (Stripe's model): every tenant-owned row carries the mode it
was made in, and every query scopes by project *and* mode through ``Tenant`` (each app's
``for_tenant`` queryset method), so a test key never reaches a live row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from accounts.models import Project


class Owned(Protocol):
    """A tenant-owned row: its project and the mode it was made in."""

    project: Project
    mode: str


@dataclass(frozen=True, slots=True)
class Tenant:
    project: Project
    mode: str  # ApiKey.Environment: "test" or "live"

    @property
    def project_id(self) -> str:
        return self.project.id

    def owner(self) -> dict[str, Any]:
        """The fields a new tenant-owned row is created with."""
        return {"project": self.project, "mode": self.mode}

    @classmethod
    def of(cls, row: Owned) -> Tenant:
        """The tenant a row belongs to (for work that starts from a row, not a request)."""
        return cls(project=row.project, mode=row.mode)
