from rest_framework.routers import DefaultRouter

from .api import AuditEntryViewSet

router = DefaultRouter()
router.register("entries", AuditEntryViewSet, basename="audit-entry")
urlpatterns = router.urls
