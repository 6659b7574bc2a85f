from django.apps import AppConfig


class AuditConfig(AppConfig):
    """The append-only record of researchers' decisions (who, when, what, why)."""

    name = "audit"
    default_auto_field = "django.db.models.BigAutoField"
