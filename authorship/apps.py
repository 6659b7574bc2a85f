from django.apps import AppConfig


class AuthorshipConfig(AppConfig):
    name = "authorship"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import pre_delete

        from . import sentence_tally, typing_tally
        from .models import WritingEvidence, WrittenSentence
        from .services import register_typist_hold_kind

        register_typist_hold_kind()
        typing_tally.TALLY.register()
        pre_delete.connect(
            typing_tally.evidence_deleting, sender=WritingEvidence, dispatch_uid="authorship.typing_tally"
        )
        sentence_tally.TALLY.register()
        pre_delete.connect(
            sentence_tally.sentence_deleting, sender=WrittenSentence, dispatch_uid="authorship.sentence_tally"
        )
