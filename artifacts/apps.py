from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    """Annotation artifacts: phenomenon tags (MultiNLI §4), give-away words (Poliak et al. 2018 §6)."""

    name = "artifacts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from corpus import signals
        from crowd.models import Study

        # After a fold, the give-away listings kept from the word tally are recomputed.
        from . import listings, tag_tally

        signals.tallies_folded.connect(listings.tallies_folded, dispatch_uid="artifacts-giveaway-listings")
        # The tag tally follows gold labels and splits (corpus sends, reads nothing back) and is
        # folded, checked and rebuilt with the corpus's tallies.
        tag_tally.TALLY.register()

        from .models import StudyNudge
        from .views import bump_nudge_version

        for model in (Study, StudyNudge):
            post_save.connect(bump_nudge_version, sender=model, dispatch_uid=f"artifacts-nudge-{model.__name__}-save")
            post_delete.connect(
                bump_nudge_version, sender=model, dispatch_uid=f"artifacts-nudge-{model.__name__}-delete"
            )
