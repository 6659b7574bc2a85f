from django.apps import AppConfig


class AuthorshipConfig(AppConfig):
    name = "authorship"
    default_auto_field = "django.db.models.BigAutoField"
