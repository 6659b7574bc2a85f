from django.apps import AppConfig


class ConsentConfig(AppConfig):
    """A study's information sheet, each participant's consent to it, and withdrawal from the study."""

    name = "consent"
    default_auto_field = "django.db.models.BigAutoField"
