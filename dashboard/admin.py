"""The dashboard's links in the admin of the apps below it: a training run's row links to its
results page. The admin class stays modeling's; the dashboard extends it (an arrow down)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from modeling.admin import TrainingRunAdmin
from modeling.models import TrainingRun


class TrainingRunWithResultsAdmin(TrainingRunAdmin):
    list_display = [*TrainingRunAdmin.list_display, "results_page"]

    @admin.display(description="results")
    def results_page(self, run):
        return format_html('<a href="{}">dashboard</a>', reverse("dashboard:training_detail", args=[run.pk]))


admin.site.unregister(TrainingRun)
admin.site.register(TrainingRun, TrainingRunWithResultsAdmin)
