"""The filters of ``GET /v1/jobs``, newest first (the view's order), served by
job_project_id; ``status`` and ``type`` narrow it."""

from __future__ import annotations

from jobs.models import Job
from storage_service.filtering import CleanedFilter, FilterSet
from storage_service.serializers import choice


class JobFilterSet(FilterSet):
    status = CleanedFilter(
        choice(Job.Status.values), field_name="status", help_text="Only jobs in this status."
    )
    type = CleanedFilter(
        choice(Job.Type.values), field_name="type", help_text="Only jobs of this type."
    )

    class Meta:
        model = Job
        fields: list[str] = []
