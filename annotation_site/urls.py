from django.contrib import admin
from django.templatetags.static import static
from django.urls import include, path
from django.utils.functional import lazy
from django.views.generic import RedirectView

urlpatterns = [
    # Browsers ask for /favicon.ico whatever the page says; send them to the real one. Its name is
    # looked up on a request, not on import: with the production settings' manifest (hashed names)
    # every command would otherwise need collectstatic first (docs/deployment.md).
    path("favicon.ico", RedirectView.as_view(url=lazy(static, str)("favicon.svg"), permanent=True)),
    path("admin/", admin.site.urls),
    path("accounts/", include("django.contrib.auth.urls")),
    path("api/artifacts/", include("artifacts.urls_api")),
    path("api/validation/", include("validation.urls_api")),
    path("api/audit/", include("audit.urls_api")),
    path("api/", include("modeling.api.urls")),
    path("dashboard/", include("dashboard.urls")),
    path("artifacts/", include("artifacts.urls")),
    path("validate/", include("validation.urls")),
    path("adversarial/", include("adversarial.urls")),
    path("markets/hooks/", include("markets.urls")),
    path("", include("consent.urls")),
    path("", include("quality.qualification_urls")),
    path("", include("collection.urls")),
    path("", include("crowd.urls")),
]

# JSON under /api/, the friendly page elsewhere (base/api_errors.py).
handler404 = "base.api_errors.page_not_found"
