from django.apps import AppConfig


class CrowdConfig(AppConfig):
    """Crowdworkers' arrival from Prolific and MTurk, studies, their sessions and completion."""

    name = "crowd"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .holds import register_crowd_hold_kinds

        register_crowd_hold_kinds()
