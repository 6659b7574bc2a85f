from django.apps import AppConfig


class DashboardConfig(AppConfig):
    """The researcher dashboard: collection, validation, corpus, workers, snapshots, training."""

    name = "dashboard"

    def ready(self) -> None:
        from django.db.models.signals import m2m_changed, post_delete, post_save

        from artifacts.models import MonitorRefresh
        from corpus import signals
        from corpus.models import Genre, WorkerExclusion
        from crowd.models import Study
        from model_annotators.models import Calibration, ModelAnnotator, ModelUse
        from privacy.signals import participant_removed as participant_removed_signal
        from validation.signals import adjudication_requests_changed

        from .figure_cache import gold_recounted, participant_removed, rows_changed_receiver
        from .models import PairBulkAction
        from .queries.adjudication import QUEUE_FIGURES
        from .queries.pair_form import forget

        # The dashboard keeps its own mark of when its cached figures went out of date.
        signals.gold_recounted.connect(gold_recounted, dispatch_uid="dashboard-figures-out-of-date")
        participant_removed_signal.connect(participant_removed, dispatch_uid="dashboard-figures-without-them")
        adjudication_requests_changed.connect(
            rows_changed_receiver(QUEUE_FIGURES), weak=False, dispatch_uid="dashboard-adjudication-queues-sent"
        )
        # The pair browser's kept form forgets itself when a row it shows is written.
        for model in (Genre, Study, ModelUse, PairBulkAction):
            post_save.connect(forget, sender=model, dispatch_uid=f"dashboard-pair-form-{model.__name__}")
            post_delete.connect(forget, sender=model, dispatch_uid=f"dashboard-pair-form-{model.__name__}-deleted")
        m2m_changed.connect(forget, sender=PairBulkAction.teams.through, dispatch_uid="dashboard-pair-form-teams")
        # Figures kept in the figure cache are out of date as soon as their own rows are written.
        for figure, models in (
            ("artifact-monitor", (MonitorRefresh,)),
            ("model-calibrations", (ModelAnnotator, Calibration)),
            ("writing-check-annotators", (ModelUse,)),
            ("worker-quality-page", (WorkerExclusion,)),
        ):
            receiver = rows_changed_receiver(figure)
            for written in models:
                uid = f"dashboard-figure-{figure}-{written.__name__}"
                post_save.connect(receiver, sender=written, weak=False, dispatch_uid=uid)
                post_delete.connect(receiver, sender=written, weak=False, dispatch_uid=f"{uid}-deleted")
