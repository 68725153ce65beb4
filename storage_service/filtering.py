"""The filters of every list: django-filter FilterSets whose fields are the API's rules.

Each filter is a ``CleanedFilter``: one clean function (files/validation.py style) checks the
query parameter's value, gives the value the filter applies, and states the parameter's JSON
Schema for the OpenAPI document (storage_service/openapi/), so the rule and its
documentation cannot drift. A refused value is the usual 400 ``VALIDATION_ERROR`` with the
rule's message under the parameter's name.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Any

import django_filters
from django import forms
from django.db.models import QuerySet
from django_filters.rest_framework import DjangoFilterBackend
from rest_framework import serializers
from rest_framework.request import Request

from storage_service.errors import ValidationError


class CleanedFormField(forms.Field):
    """A form field checked by one clean function; an absent parameter is None."""

    def __init__(self, *, clean_value: Callable[[str], Any], **kwargs: Any) -> None:
        self.clean_value = clean_value
        super().__init__(**kwargs)

    def clean(self, value: Any) -> Any:
        if value is None:
            return None
        try:
            return self.clean_value(value)
        except serializers.ValidationError as exc:
            raise forms.ValidationError([str(message) for message in exc.detail]) from exc


class CleanedFilter(django_filters.Filter):
    """A filter whose parameter ``clean`` checks. ``default`` is the value an absent parameter
    stands for (documented; the filter set applies it)."""

    field_class = CleanedFormField

    def __init__(self, clean: Callable[[str], Any], *, default: Any = None, **kwargs: Any) -> None:
        self.clean = clean
        self.default = default
        super().__init__(clean_value=clean, **kwargs)


class FilterSet(django_filters.FilterSet):
    """django-filter's FilterSet, its form class built once per class.

    django-filter builds a new form class, with a new form field per filter, for every
    instance: on a list request that cost more than the list's SQL. The fields here depend on
    nothing of the request (each is its filter's clean function), so one class serves all.
    """

    @classmethod
    @cache
    def form_class(cls) -> type[forms.Form]:
        # Each form field made here from its filter's clean function, not taken from the
        # filter (``Filter.field`` keeps the field it makes on the filter, and every filter set
        # deep-copies its filters, so each request would copy those fields twice).
        fields = {
            name: CleanedFormField(clean_value=filter_.clean, required=False)
            for name, filter_ in cls.base_filters.items()
        }
        # The form class of the documented ``Meta.form`` option, as django-filter reads it.
        base = getattr(getattr(cls, "Meta", None), "form", forms.Form)
        return type(f"{cls.__name__}Form", (base,), fields)

    def get_form_class(self) -> type[forms.Form]:
        return self.form_class()


class FilterBackend(DjangoFilterBackend):
    """django-filter's backend. Before any filtering, every query parameter of the list is
    checked, the paginator's (``limit``, ``cursor``) included, and one 400 names every bad
    one. A parameter given twice is refused too: ambiguous, rather than silently taking one
    of the values."""

    def filter_queryset(self, request: Request, queryset: QuerySet[Any], view: Any) -> Any:
        params = request.query_params
        repeated = [key for key in params if len(params.getlist(key)) > 1]
        if repeated:
            raise ValidationError(
                "A query parameter was given more than once.",
                details={key: ["Given more than once."] for key in repeated},
            )
        paginator = getattr(view, "paginator", None)
        errors = paginator.query_errors(request) if paginator is not None else {}
        filterset = self.get_filterset(request, queryset, view)
        if filterset is not None and not filterset.is_valid():
            errors.update({name: list(messages) for name, messages in filterset.errors.items()})
        if errors:
            raise serializers.ValidationError(errors)
        return queryset if filterset is None else filterset.qs
