from django.apps import AppConfig


class SiteConfig(AppConfig):
    """The composition root as an app: last in INSTALLED_APPS, so that every process that sets
    Django up (web servers, Celery workers, commands, tests) registers the task apps into the layers
    beneath them once every app is loaded (annotation_site/wiring.py)."""

    name = "annotation_site"
    verbose_name = "Site (composition root)"

    def ready(self) -> None:
        from annotation_site import wiring

        wiring.register()
