from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Quality control for a paid crowd: researcher labels, catch trials, bonuses, worker flags,
    qualification tests and probabilistic aggregation."""

    name = "quality"
    default_auto_field = "django.db.models.BigAutoField"
