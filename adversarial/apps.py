from django.apps import AppConfig


class AdversarialConfig(AppConfig):
    """Model-in-the-loop writing rounds (Nie et al. 2020, "Adversarial NLI", §2: HAMLET)."""

    name = "adversarial"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from crowd.holds import code_holds_decided
        from validation.signals import validation_labels_added

        from .services import queue_released_examples
        from .verification import settle_after_labels

        validation_labels_added.connect(settle_after_labels, dispatch_uid="adversarial-settle-verifications")
        code_holds_decided.connect(queue_released_examples, dispatch_uid="adversarial-queue-released-examples")
