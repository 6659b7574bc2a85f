from django.apps import AppConfig


class ModelingConfig(AppConfig):
    name = "modeling"
    default_auto_field = "django.db.models.BigAutoField"
