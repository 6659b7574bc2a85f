from django.apps import AppConfig


class AuthorshipConfig(AppConfig):
    name = "authorship"
    default_auto_field = "django.db.models.BigAutoField"

    def ready(self) -> None:
        from .services import register_typist_hold_kind

        register_typist_hold_kind()
