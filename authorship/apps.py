from django.apps import AppConfig


class AuthorshipConfig(AppConfig):
    name = "authorship"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from .models import WritingEvidence
        from .services import register_typist_hold_kind
        from .typing_tally import TALLY, evidence_deleting

        register_typist_hold_kind()
        TALLY.register()
        pre_delete.connect(evidence_deleting, sender=WritingEvidence, dispatch_uid="authorship.typing_tally")
