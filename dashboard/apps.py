from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The researcher dashboard: collection, validation, corpus, workers, snapshots, training."""

    name = "dashboard"

    def ready(self) -> None:
        from corpus import signals

        from .figure_cache import gold_recounted

        # The dashboard keeps its own mark of when its cached figures went out of date.
        signals.gold_recounted.connect(gold_recounted, dispatch_uid="dashboard-figures-out-of-date")
