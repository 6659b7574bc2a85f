"""/api/validation/ (validation/api.py), mounted by annotation_site/urls.py."""

from rest_framework.routers import SimpleRouter

from .api import PremiseLabelViewSet

router = SimpleRouter()
router.register("premise-labels", PremiseLabelViewSet, basename="premise-label")

urlpatterns = router.urls
