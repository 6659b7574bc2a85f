from django.apps import AppConfig


class QualityConfig(AppConfig):
    """Quality control for a paid crowd: researcher labels, catch trials, bonuses, worker flags,
    qualification tests and probabilistic aggregation."""

    name = "quality"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        # The worker-flag rows follow new labels: a coalesced refresh after each label write.
        from corpus.signals import gold_recounted, pairs_moved

        from .flag_rows import labels_moved
        from .guessers import register_quality_hold_kinds

        pairs_moved.connect(labels_moved, dispatch_uid="quality-worker-flags-pairs-moved")
        gold_recounted.connect(labels_moved, dispatch_uid="quality-worker-flags-gold-recounted")
        register_quality_hold_kinds()
