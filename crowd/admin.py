"""Admin of studies and their sessions (researchers only).

A researcher approves submissions on the market from the completed sessions: the study list
shows how many completed, each study its sessions with their codes, and the action
"Export completed sessions (CSV)" downloads them.
"""

import csv
from contextvars import ContextVar
from typing import Any, TypedDict

from django.contrib import admin
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django_stubs_ext import WithAnnotations

from annotation_site import wiring

from . import selectors
from .models import Study, StudySession


class StudyCounts(TypedDict):
    """What StudyAdmin.get_queryset annotates each study with."""

    _sessions: int
    _completed: int


class StudySessionInline(admin.TabularInline[StudySession, Study]):
    model = StudySession
    fields = readonly_fields = (
        "worker",
        "external_session_id",
        "tasks_done",
        "started_at",
        "completed_at",
        "completion_code",
    )
    extra = 0
    can_delete = False
    show_change_link = True
    max_num = 0


class CompletedFilter(admin.SimpleListFilter):
    title = "completed"
    parameter_name = "completed"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("yes", "completed"), ("no", "not completed")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        if self.value() == "yes":
            return queryset.filter(completed_at__isnull=False)
        if self.value() == "no":
            return queryset.filter(completed_at__isnull=True)
        return queryset


# The origin (scheme and host) of the admin request being rendered: readonly fields get no request.
_site_origin: ContextVar[str] = ContextVar("site_origin", default="")


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin[Study]):
    list_display = [
        "slug",
        "name",
        "dataset",
        "task_kind",
        "tasks_per_batch",
        "payment_per_task",
        "is_active",
        "session_count",
        "completed_count",
    ]
    list_filter = ["dataset", "task_kind", "is_active"]
    list_select_related = ["dataset"]
    search_fields = ["slug", "name"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at", "study_link"]
    actions = ["export_completions"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Study]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                _sessions=Count("sessions"),
                _completed=Count("sessions", filter=Q(sessions__completed_at__isnull=False)),
            )
        )

    @admin.display(description="sessions", ordering="_sessions")
    def session_count(self, study: "WithAnnotations[Study, StudyCounts]") -> int:
        return int(study._sessions)

    def changeform_view(self, request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        # The link is shown as a full URL to paste into the market, with this site's own address.
        token = _site_origin.set(request.build_absolute_uri("/").rstrip("/"))
        try:
            response = super().changeform_view(request, *args, **kwargs)
            if isinstance(response, TemplateResponse):
                response.render()  # here, while the origin is set: a TemplateResponse renders late
            return response
        finally:
            _site_origin.reset(token)

    @admin.display(description="study link (signed)")
    def study_link(self, study: Study) -> str:
        if not study.pk:
            return "Save the study first."
        path = _site_origin.get() + reverse("study_entry", args=[study.slug])
        prolific = f"{path}?sig={study.link_signature()}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}"
        mturk = f"{path}?sig={study.link_signature()}"
        return format_html(
            "Prolific: <code>{}</code><br>MTurk (ExternalQuestion URL): <code>{}</code>", prolific, mturk
        )

    @admin.display(description="completed", ordering="_completed")
    def completed_count(self, study: "WithAnnotations[Study, StudyCounts]") -> str:
        # A link to the study's completed sessions with their codes (a list page: studies may have thousands).
        url = reverse("admin:crowd_studysession_changelist") + f"?study__id__exact={study.pk}&completed=yes"
        return format_html('<a href="{}">{}</a>', url, study._completed)

    @admin.action(description="Export completed sessions (CSV)")
    def export_completions(self, request: HttpRequest, queryset: QuerySet[Study]) -> HttpResponse:
        response = HttpResponse(content_type="text/csv; charset=utf-8")
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response["Content-Disposition"] = f'attachment; filename="completed-sessions-{stamp}.csv"'
        writer = csv.writer(response)
        writer.writerow(selectors.COMPLETION_CSV_COLUMNS)
        writer.writerows(wiring.completion_rows(queryset.order_by("slug")))
        return response


@admin.register(StudySession)
class StudySessionAdmin(admin.ModelAdmin[StudySession]):
    list_display = [
        "id",
        "study",
        "worker",
        "external_session_id",
        "tasks_done",
        "started_at",
        "completed_at",
        "worker_marks",
        "completion_code",
    ]
    list_filter = ["study", CompletedFilter, "worker__market"]
    list_select_related = ["study", "worker__user"]
    search_fields = [
        "external_session_id",
        "external_study_id",
        "worker__external_id",
        "worker__user__username",
        "completion_code",
    ]
    autocomplete_fields = ["study", "worker"]
    readonly_fields = ["tasks_done", "started_at", "completed_at", "completion_code", "turk_submit_to"]
    show_full_result_count = False

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        # The page's sessions get their workers' marks in one pass (excluded, flagged: issue 27),
        # so a researcher approving from this list sees them beside the codes.
        changelist = super().get_changelist_instance(request)
        marks = wiring.worker_marks(session.worker_id for session in changelist.result_list)
        for session in changelist.result_list:
            session.marks = marks.get(session.worker_id, [])
        return changelist

    @admin.display(description="worker marks")
    def worker_marks(self, session: StudySession) -> str:
        marks = getattr(session, "marks", None)
        if marks is None:
            marks = wiring.worker_marks([session.worker_id]).get(session.worker_id, [])
        return format_html('<span class="worker-marks">{}</span>', "; ".join(marks)) if marks else "—"
