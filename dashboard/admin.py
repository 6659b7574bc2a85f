"""The dashboard's links in the admin of the apps below it: a training run's row links to its
results page, a study's row to its study page. The admin classes stay their apps'; the dashboard
extends them (an arrow down)."""

from django.contrib import admin
from django.urls import reverse
from django.utils.html import format_html

from crowd.admin import StudyAdmin
from crowd.models import Study
from modeling.admin import TrainingRunAdmin
from modeling.models import TrainingRun


class TrainingRunWithResultsAdmin(TrainingRunAdmin):
    list_display = [*TrainingRunAdmin.list_display, "results_page"]

    @admin.display(description="results")
    def results_page(self, run):
        return format_html('<a href="{}">dashboard</a>', reverse("dashboard:training_detail", args=[run.pk]))


admin.site.unregister(TrainingRun)
admin.site.register(TrainingRun, TrainingRunWithResultsAdmin)


class StudyWithPageAdmin(StudyAdmin):
    """The study list links each study to its dashboard page (funnel, times, pay, costs)."""

    list_display = [*StudyAdmin.list_display, "study_page"]

    @admin.display(description="dashboard")
    def study_page(self, study):
        return format_html('<a href="{}">study page</a>', reverse("dashboard:study", args=[study.slug]))


admin.site.unregister(Study)
admin.site.register(Study, StudyWithPageAdmin)
