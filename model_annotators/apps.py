from django.apps import AppConfig


class ModelAnnotatorsConfig(AppConfig):
    """A model as an annotator: a finished training run or an OpenAI-compatible chat
    endpoint labels pairs beside the crowd, in a table of its own, and is measured like a person."""

    name = "model_annotators"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from django.db.models.signals import post_delete, post_save

        from validation.signals import validation_labels_added

        from .live_vote import forget_votes_on, stop_pairs_the_model_decides
        from .models import ModelUse, PromptVersion
        from .triage import forget_triage

        validation_labels_added.connect(stop_pairs_the_model_decides, dispatch_uid="model-annotators-vote")
        post_save.connect(forget_votes_on, sender=ModelUse, dispatch_uid="model-annotators-votes-on")
        post_delete.connect(forget_votes_on, sender=ModelUse, dispatch_uid="model-annotators-votes-on-deleted")
        post_save.connect(forget_triage, sender=ModelUse, dispatch_uid="model-annotators-triage")
        post_delete.connect(forget_triage, sender=ModelUse, dispatch_uid="model-annotators-triage-deleted")
        post_save.connect(forget_triage, sender=PromptVersion, dispatch_uid="model-annotators-triage-prompt")
