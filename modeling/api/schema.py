"""The OpenAPI schema and Swagger UI, for researchers only; Swagger's assets come from the sidecar (no CDN)."""
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation_site.permissions import IsResearcher

from .strict import StrictQueryParamsMixin


class ResearcherSchemaView(StrictQueryParamsMixin, SpectacularAPIView):
    permission_classes = [IsResearcher]
    extra_query_params = ("lang",)


class ResearcherSwaggerView(StrictQueryParamsMixin, SpectacularSwaggerView):
    permission_classes = [IsResearcher]
