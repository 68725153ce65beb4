"""The filters and the order of ``GET /v1/jobs``: newest first (ids are time-ordered), served
by job_project_id; ``status`` and ``type`` narrow it."""

from __future__ import annotations

from jobs.models import Job, JobQuerySet
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

    def filter_queryset(self, queryset: JobQuerySet) -> JobQuerySet:
        return super().filter_queryset(queryset).order_by("-id")
