from django.apps import AppConfig


class BaseConfig(AppConfig):
    """The base every app builds on: long tasks, uploads, throttles, API checks, plain rows,
    permissions, the task queue, statements whose plans PostgreSQL keeps. It refers to no other app of the project, and nothing in it
    refers to the composition root (annotation_site/)."""

    name = "base"
    verbose_name = "Base"
