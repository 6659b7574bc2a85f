from django.apps import AppConfig


class ArtifactsConfig(AppConfig):
    """Annotation artifacts: phenomenon tags (MultiNLI §4), give-away words (Poliak et al. 2018 §6)."""

    name = "artifacts"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from django.db.models.signals import post_delete, post_save

        from crowd.models import Study

        from .models import StudyNudge
        from .views import bump_nudge_version

        for model in (Study, StudyNudge):
            post_save.connect(bump_nudge_version, sender=model, dispatch_uid=f"artifacts-nudge-{model.__name__}-save")
            post_delete.connect(
                bump_nudge_version, sender=model, dispatch_uid=f"artifacts-nudge-{model.__name__}-delete"
            )
