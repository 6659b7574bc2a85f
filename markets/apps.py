from django.apps import AppConfig


class MarketsConfig(AppConfig):
    """A study's connection to its crowd market (Prolific, MTurk): approvals, bonus payments, events, lists."""

    name = "markets"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The arrival check's receiver (crowd.arrival.session_arrived), connected in every process.
        from . import identity  # noqa: F401
