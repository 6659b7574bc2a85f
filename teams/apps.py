from django.apps import AppConfig


class TeamsConfig(AppConfig):
    """A lab's workspace: its members and their roles; every study, dataset and snapshot belongs to one."""

    name = "teams"
    default_auto_field = "django.db.models.BigAutoField"
