from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The researcher dashboard: collection, validation, corpus, workers, snapshots, training."""

    name = "dashboard"
