from django.apps import AppConfig


class AdversarialConfig(AppConfig):
    """Model-in-the-loop writing rounds (Nie et al. 2020, "Adversarial NLI", §2: HAMLET)."""

    name = "adversarial"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self):
        from validation.signals import validation_labels_added

        from .verification import settle_after_labels

        validation_labels_added.connect(settle_after_labels, dispatch_uid="adversarial-settle-verifications")
