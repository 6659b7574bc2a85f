from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from quality.guessers import add_strata

        from .cost_tally import TALLY
        from .premise_label_evidence import premise_label_strata

        # The cost page's tallies follow the pairs' counters, flags and split moves, and are
        # folded, checked and rebuilt with the corpus's tallies.
        TALLY.register()
        # A worker's per-premise labels are evidence in every quality test of their completions.
        add_strata(premise_label_strata)
