from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Quality control for a paid crowd: researcher labels, catch trials, bonuses, worker flags,
    qualification tests and probabilistic aggregation."""

    name = "quality"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Studies with access "qualified" ask this app's check, registered by annotation_site/wiring.py.
        from . import admin_qualification  # noqa: F401  (registers the qualification admin)
