"""Query parameters are checked, not ignored: a typo in a filter must not silently return everything.

Shared by every app's API (modeling's /api/, validation's /api/validation/): apps of one layer never import
each other, so the rules sit here, beneath them all."""

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

import django_filters
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import QueryDict
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination

from base.api_errors import MISSING

if TYPE_CHECKING:  # the mixin's super() is the DRF view it is mixed into
    from rest_framework.views import APIView

    _ViewBase = APIView
else:
    _ViewBase = object

# Parameters every list understands besides its own filters.
COMMON_PARAMS = frozenset({"format"})
PAGINATION_PARAMS = frozenset({"cursor", "page_size"})


class StrictQueryParamsMixin(_ViewBase):
    """Answer 400 naming any query parameter the view does not know.

    The allowed set is the view's filterset fields, `extra_query_params`, `format`, and the
    pagination parameters when the view paginates.
    """

    extra_query_params: tuple[str, ...] = ()
    empty_query_params: tuple[str, ...] = ()  # flags given without a value (Swagger's `?script=`)

    def allowed_query_params(self) -> set[str]:
        allowed = set(COMMON_PARAMS) | set(self.extra_query_params)
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is not None:
            allowed |= set(filterset_class.base_filters)
        if getattr(self, "pagination_class", None) is not None:
            allowed |= PAGINATION_PARAMS
        return allowed

    def initial(self, request: Any, *args: Any, **kwargs: Any) -> None:
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD"):
            return
        allowed = self.allowed_query_params()
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise ValidationError(
                {
                    name: [f"Unknown query parameter '{name}'. Allowed: {', '.join(sorted(allowed))}."]
                    for name in unknown
                }
            )
        refuse_empty(request.query_params, allowed=self.empty_query_params)


def refuse_empty(params: QueryDict, *, allowed: Collection[str] = ()) -> None:
    """`?dataset=` is not "every dataset": an empty value is a mistake, said so (the schema gives
    every string parameter minLength 1). `allowed`: flags given without a value."""
    empty = sorted(name for name, values in params.lists() if name not in allowed and "" in values)
    if empty:
        raise ValidationError(
            {name: [f"'{name}' is empty: leave the parameter out or give it a value."] for name in empty}
        )


class _KnownObjectField(django_filters.fields.ModelChoiceField):
    def to_python(self, value: Any) -> Any:
        try:
            return super().to_python(value)
        except DjangoValidationError as error:
            if error.code != "invalid_choice":
                raise
            raise DjangoValidationError(
                "No %(model)s '%(value)s'.",
                code=MISSING,
                params={"model": self.queryset.model._meta.verbose_name, "value": value},
            ) from None


class KnownObjectFilter(django_filters.ModelChoiceFilter):
    """A filter by slug or id whose unknown value answers 404 naming it (not 400): the request is
    well formed, the object is missing (base.api_errors)."""

    field_class = _KnownObjectField


class StrictCursorPagination(CursorPagination):
    """Cursor pagination by ascending id (stable while rows are added) with a checked page_size."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request: Any) -> int:
        raw = request.query_params.get(self.page_size_query_param)
        if raw is None:
            return self.page_size
        try:
            value = int(raw)
        except ValueError:
            value = 0
        if not 1 <= value <= self.max_page_size:
            raise ValidationError({"page_size": [f"An integer from 1 to {self.max_page_size}, not '{raw}'."]})
        return value


class NewestFirstCursorPagination(StrictCursorPagination):
    ordering = "-id"
    page_size = 50


def validated(
    serializer_class: type[serializers.Serializer[Any]], data: Any, context: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`data` (a request's body or query) as the serializer makes it; 400 naming what is wrong
    (`context`: the serializer's, e.g. the request for fields that scope by its user)."""
    incoming = serializer_class(data=data, context=context or {})
    incoming.is_valid(raise_exception=True)
    checked: dict[str, Any] = incoming.validated_data
    return checked


class KnownFieldsSerializer(serializers.Serializer[Any]):
    """A request body whose unknown fields are refused by name, not ignored (a typo such as
    `filter` for `filters` would otherwise be silently dropped). The schema says
    additionalProperties: false for request bodies (modeling.api.schema)."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            unknown = sorted(set(data) - set(self.fields))
            if unknown:
                raise ValidationError({name: [f"Unknown field. Known: {', '.join(self.fields)}."] for name in unknown})
        return super().to_internal_value(data)
