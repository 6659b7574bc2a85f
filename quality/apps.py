from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Quality control for a paid crowd: researcher labels, catch trials, bonuses, worker flags,
    qualification tests and probabilistic aggregation."""

    name = "quality"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        # Studies with access "qualified" ask this app's check (crowd never imports quality).
        from crowd.access import register_admission_check

        from . import admin_qualification  # noqa: F401  (registers the qualification admin)
        from .qualification import admission_check

        register_admission_check(admission_check)
