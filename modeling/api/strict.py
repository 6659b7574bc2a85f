"""Query parameters are checked, not ignored: a typo in a filter must not silently return everything."""
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination

# Parameters every list understands besides its own filters.
COMMON_PARAMS = frozenset({"format"})
PAGINATION_PARAMS = frozenset({"cursor", "page_size"})


class StrictQueryParamsMixin:
    """Answer 400 naming any query parameter the view does not know.

    The allowed set is the view's filterset fields, `extra_query_params`, `format`, and the
    pagination parameters when the view paginates.
    """

    extra_query_params = ()

    def allowed_query_params(self):
        allowed = set(COMMON_PARAMS) | set(self.extra_query_params)
        filterset_class = getattr(self, "filterset_class", None)
        if filterset_class is not None:
            allowed |= set(filterset_class.base_filters)
        if getattr(self, "pagination_class", None) is not None:
            allowed |= PAGINATION_PARAMS
        return allowed

    def initial(self, request, *args, **kwargs):
        super().initial(request, *args, **kwargs)
        if request.method not in ("GET", "HEAD"):
            return
        allowed = self.allowed_query_params()
        unknown = sorted(set(request.query_params) - allowed)
        if unknown:
            raise ValidationError(
                {name: [f"Unknown query parameter '{name}'. Allowed: {', '.join(sorted(allowed))}."] for name in unknown}
            )


class StrictCursorPagination(CursorPagination):
    """Cursor pagination by ascending id (stable while rows are added) with a checked page_size."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def get_page_size(self, request):
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
