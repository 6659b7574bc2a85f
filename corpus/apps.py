from django.apps import AppConfig
from django.db.models.signals import post_save


class CorpusConfig(AppConfig):
    """The core: datasets, genres, premises, workers, pairs, labels, the gold rule and the counters."""

    name = "corpus"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from . import tallies, worker_tally
        from .models import Premise

        post_save.connect(tallies.premise_saved, sender=Premise, dispatch_uid="corpus.tallies.premise_saved")
        worker_tally.TALLY.register()  # folded, checked and rebuilt with the corpus's tallies
