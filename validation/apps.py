from django.apps import AppConfig


class ValidationConfig(AppConfig):
    name = "validation"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .cost_tally import TALLY

        # The cost page's tallies follow the pairs' counters, flags and split moves, and are
        # folded, checked and rebuilt with the corpus's tallies.
        TALLY.register()
