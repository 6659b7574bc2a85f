"""Admin of studies and their sessions (researchers only).

A researcher approves submissions on the market from the completed sessions: the study list
shows how many completed, each study its sessions with their codes, and the action
"Export completed sessions (CSV)" downloads them. The allow- and block-lists are pasted ids (one
per line or comma-separated), never a multi-select of every worker: a pasted id that names nobody
is reported by name and nothing is saved.
"""

from contextvars import ContextVar
from typing import Any, TypedDict

from django import forms
from django.contrib import admin, messages
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html
from django_stubs_ext import WithAnnotations

from base import spreadsheet_safe
from corpus.models import Premise

from . import holds, registry, selectors
from .models import CodeHold, CodeHoldDecision, Study, StudySession


class StudyCounts(TypedDict):
    """What StudyAdmin.get_queryset annotates each study with."""

    _sessions: int
    _completed: int


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


class CodeHoldFilter(admin.SimpleListFilter):
    """The sessions by where their holds stand (crowd.holds): the bonus page links to "waiting"."""

    title = "code hold"
    parameter_name = "hold"

    def lookups(self, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> list[tuple[str, str]]:
        return [("waiting", "waiting for a decision"), ("refused", "refused"), ("paid", "not held or released")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> QuerySet[Any]:
        rule = {"waiting": holds.hold_waits, "refused": holds.hold_refused, "paid": holds.money_may_go}
        chosen = rule.get(self.value() or "")
        return queryset.filter(chosen()) if chosen is not None else queryset


class CodeHoldInline(admin.TabularInline[CodeHold, StudySession]):
    """The session's holds, one reason a row, as the checks and findings wrote them: never by hand."""

    model = CodeHold
    extra = 0
    can_delete = False
    fields = ("kind", "text", "found_at", "decision", "decided_at", "decided_by")
    readonly_fields = fields

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


UNKNOWN_IDS_SHOWN = 20


class StudyForm(forms.ModelForm[Study]):
    """The study form: its worker lists as pasted ids, its pool offering the files premises were
    imported from (a name no longer among them stays choosable), not a JSON text box."""

    pool_sources = forms.MultipleChoiceField(
        required=False,
        label="Pool sources",
        help_text=Study._meta.get_field("pool_sources").help_text,
        widget=forms.SelectMultiple(attrs={"size": 8}),
    )

    allowed_ids = forms.CharField(
        required=False,
        label="Allow-list (access: closed)",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 40, "spellcheck": "false"}),
        help_text="Participant ids (Prolific PID, MTurk worker id) or usernames, one per line or comma-separated.",
    )
    blocked_ids = forms.CharField(
        required=False,
        label="Block-list (every access)",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 40, "spellcheck": "false"}),
        help_text="Ids refused at the study link whatever the access, one per line or comma-separated. "
        "Checked at arrival: a session already running may finish (exclude the worker to stop them now).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        names = set(Premise.objects.exclude(source="").order_by().values_list("source", flat=True).distinct())
        names.update(self.instance.pool_sources or [])
        self.fields["pool_sources"].choices = [(name, name) for name in sorted(names)]  # type: ignore[attr-defined]
        if self.instance.pk:
            self.initial["allowed_ids"] = selectors.worker_list_text(self.instance.allowed_workers.all())
            self.initial["blocked_ids"] = selectors.worker_list_text(self.instance.blocked_workers.all())

    def _workers(self, name: str) -> list[Any]:
        workers, unknown = selectors.workers_by_pasted_ids(self.cleaned_data.get(name, ""))
        if unknown:
            shown = ", ".join(unknown[:UNKNOWN_IDS_SHOWN])
            more = f" and {len(unknown) - UNKNOWN_IDS_SHOWN} more" if len(unknown) > UNKNOWN_IDS_SHOWN else ""
            raise forms.ValidationError(
                f"No worker has {'this id' if len(unknown) == 1 else 'these ids'}: {shown}{more}. "
                "Nothing was saved: correct or remove them (a participant has an id here once they opened a study link)."
            )
        return workers

    def clean_allowed_ids(self) -> list[Any]:
        return self._workers("allowed_ids")

    def clean_blocked_ids(self) -> list[Any]:
        return self._workers("blocked_ids")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        both = {w.pk for w in cleaned.get("allowed_ids") or []} & {w.pk for w in cleaned.get("blocked_ids") or []}
        if both:
            names = sorted(str(w) for w in cleaned["blocked_ids"] if w.pk in both)
            raise forms.ValidationError(f"On both lists: {', '.join(names)}. Put each worker on one list only.")
        return cleaned


# The origin (scheme and host) of the admin request being rendered: readonly fields get no request.
_site_origin: ContextVar[str] = ContextVar("site_origin", default="")


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin[Study]):
    filter_horizontal = ["pool_genres"]
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
        "preview_link",
    ]
    list_filter = ["dataset", "task_kind", "is_active"]
    list_select_related = ["dataset"]
    search_fields = ["slug", "name"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at", "study_link", "preview_link"]
    actions = ["export_completions"]
    form = StudyForm
    # The lists are the form's pasted ids, not a multi-select of every worker.
    exclude = ["allowed_workers", "blocked_workers"]

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # In the admin's one transaction with the study itself.
        super().save_related(request, form, formsets, change)
        form.instance.allowed_workers.set(form.cleaned_data["allowed_ids"])
        form.instance.blocked_workers.set(form.cleaned_data["blocked_ids"])
        # Saved all the same: a researcher may mark the catch pairs after setting the study up.
        shortfall = registry.catch_shortfall(form.instance)
        if shortfall:
            messages.warning(request, shortfall)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Study]:
        return (
            super()
            .get_queryset(request)
            .annotate(
                # A researcher's previews are no participants' visits (crowd.preview).
                _sessions=Count("sessions", filter=Q(sessions__is_preview=False)),
                _completed=Count(
                    "sessions", filter=Q(sessions__completed_at__isnull=False, sessions__is_preview=False)
                ),
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

    @admin.display(description="preview")
    def preview_link(self, study: Study) -> str:
        # The researcher walks through the study as a participant, with nothing saved (crowd.preview).
        if not study.pk:
            return "Save the study first."
        url = reverse("study_preview_start", args=[study.slug])
        return format_html('<a href="{}">Preview as a participant (nothing saved)</a>', url)

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
        writer = spreadsheet_safe.writer(response)
        writer.writerow(selectors.COMPLETION_CSV_COLUMNS)
        writer.writerows(
            selectors.completion_rows(queryset.order_by("slug"), flagged=registry.registered().worker_flags)
        )
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
        "code_held_reason",
        "market_check",
    ]
    list_filter = [
        "study",
        CompletedFilter,
        CodeHoldFilter,
        "ended_as",
        "market_check",
        "worker__market",
        "is_preview",
    ]
    list_select_related = ["study__dataset", "worker__user"]
    search_fields = [
        "external_session_id",
        "external_study_id",
        "worker__external_id",
        "worker__user__username",
        "completion_code",
    ]
    autocomplete_fields = ["study", "worker"]
    readonly_fields = [
        "tasks_done",
        "started_at",
        "completed_at",
        "completion_code",
        "turk_submit_to",
        "code_held_reason",
        # What the market said of the session's ids (markets.identity): never set by hand.
        "market_check",
        "market_check_note",
        "market_participant_id",
        "market_checked_at",
        "market_check_tries",
        # Closed by the market's event, the participant's withdrawal or their erasure, which also
        # release the visit's claims: never by hand.
        "closed_at",
        "ended_as",
        "closed_reason",
    ]
    show_full_result_count = False
    # A held code is decided as other holds are (premises): an action on the selected rows.
    actions = ["release_held_codes", "refuse_held_codes"]
    inlines = [CodeHoldInline]

    @admin.action(description="Release the held codes of the selected sessions (their bonuses become payable)")
    def release_held_codes(self, request: HttpRequest, queryset: QuerySet[StudySession]) -> None:
        decided = holds.decide_code_holds(
            list(queryset.values_list("pk", flat=True)), CodeHoldDecision.RELEASED, by=getattr(request, "user", None)
        )
        self.message_user(request, f"{decided} held code(s) released: their bonuses may be paid now.")

    @admin.action(description="Refuse the held codes of the selected sessions (their bonuses are never paid)")
    def refuse_held_codes(self, request: HttpRequest, queryset: QuerySet[StudySession]) -> None:
        decided = holds.decide_code_holds(
            list(queryset.values_list("pk", flat=True)), CodeHoldDecision.REFUSED, by=getattr(request, "user", None)
        )
        self.message_user(request, f"{decided} held code(s) refused: their bonuses will not be paid.")

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        # The page's sessions get their workers' marks (excluded, flagged) in one pass, so a
        # researcher approving from this list sees them beside the codes.
        changelist = super().get_changelist_instance(request)
        by_team: dict[int | None, list[StudySession]] = {}
        for session in changelist.result_list:
            by_team.setdefault(session.study.dataset.team_id, []).append(session)
        for team_id, sessions in by_team.items():  # an exclusion is its team's: marks per team
            marks = registry.worker_marks((session.worker_id for session in sessions), team_id=team_id)
            for session in sessions:
                session.marks = marks.get(session.worker_id, [])  # type: ignore[attr-defined]  # read below
        return changelist

    @admin.display(description="worker marks")
    def worker_marks(self, session: StudySession) -> str:
        marks = getattr(session, "marks", None)
        if marks is None:
            marks = registry.worker_marks([session.worker_id], team_id=session.study.dataset.team_id).get(
                session.worker_id, []
            )
        return format_html('<span class="worker-marks">{}</span>', "; ".join(marks)) if marks else "—"
