"""/api/validation/ (validation/api.py), mounted by annotation_site/urls.py."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from .api import AgreementView, PremiseLabelViewSet

router = SimpleRouter()
router.register("premise-labels", PremiseLabelViewSet, basename="premise-label")

urlpatterns = [path("agreement/", AgreementView.as_view(), name="api-agreement"), *router.urls]
