"""The dashboard's links in the admin of the apps below it, and the admin actions whose whole
write is a service above the model's app (tests/test_admin_layering.py keeps them off the floors
below). The admin classes stay their apps'; the dashboard extends them."""

from typing import Any

from django.contrib import admin, messages
from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from audit import services as audit
from base.permissions import EXCLUDE_WORKERS
from corpus import services as corpus_services
from corpus.admin import WorkerAdmin
from corpus.admin_pairs import PairAdmin
from corpus.exclusions import ExclusionOutcome
from corpus.models import Pair, Worker
from crowd.admin import StudyAdmin
from crowd.models import Study
from modeling.admin import TrainingRunAdmin
from modeling.models import TrainingRun
from quality import services as quality_services
from quality.sequential import false_hold_rate
from teams import access
from teams.models import Team
from validation import services as validation_services

from .admin_teams import TeamAdmin, guard_every_admin

# After how many labels the study form shows the quality test's false-hold rate.
FALSE_HOLD_LABELS = (30, 60, 120)


class TrainingRunWithResultsAdmin(TrainingRunAdmin):
    list_display = [*TrainingRunAdmin.list_display, "results_page"]

    @admin.display(description="results")
    def results_page(self, run: TrainingRun) -> SafeString:
        return format_html('<a href="{}">dashboard</a>', reverse("dashboard:training_detail", args=[run.pk]))


admin.site.unregister(TrainingRun)
admin.site.register(TrainingRun, TrainingRunWithResultsAdmin)


class StudyWithPageAdmin(StudyAdmin):
    """The study form shows what its quality levels cost honest workers, so they are set knowingly."""

    list_display = [*StudyAdmin.list_display, "study_page"]
    audits_itself = frozenset({"save"})  # study.created / study.settings, below
    readonly_fields = [*StudyAdmin.readonly_fields, "quality_test_false_holds"]

    @admin.display(description="quality test: honest workers held")
    def quality_test_false_holds(self, study: Study) -> str:
        """The share of honest workers exactly at the acceptable level whose code the quality test
        holds after n labels (`quality.sequential.false_hold_rate`); better workers are held less."""
        if study.pk is None:
            return "Save the study to see the false-hold rate its levels imply."
        try:
            rates = [false_hold_rate(study.poor_accuracy, study.acceptable_accuracy, n) for n in FALSE_HOLD_LABELS]
        except ValueError as refused:
            return str(refused)
        shown = ", ".join(f"{rate:.1%} after {n} labels" for rate, n in zip(rates, FALSE_HOLD_LABELS, strict=True))
        return (
            f"An honest worker at exactly {study.acceptable_accuracy:.0%} is held {shown} "
            f"(poor {study.poor_accuracy:.0%} against acceptable {study.acceptable_accuracy:.0%}, "
            "against written labels; only with the hold on)."
        )

    def save_model(self, request: HttpRequest, obj: Study, form: Any, change: bool) -> None:
        # A study's settings as they were and as they are now, in the audit log, in one transaction.
        with transaction.atomic():
            columns = {
                field.name: field.attname for field in Study._meta.concrete_fields if field.name in form.changed_data
            }
            stored = Study.objects.filter(pk=obj.pk).values(*columns.values()).first() if change else None
            before = {name: (stored or {}).get(attname) for name, attname in columns.items()} if change else {}
            super().save_model(request, obj, form, change)
            after = {name: getattr(obj, attname) for name, attname in columns.items()}
            audit.record(
                "study.settings" if change else "study.created",
                actor=request.user,
                subject=obj,
                team_id=obj.team_id,
                before=before,
                after=after,
                reason=request.POST.get("_change_reason", ""),
                datasets=[obj.dataset.slug],
            )

    @admin.display(description="dashboard")
    def study_page(self, study: Study) -> SafeString:
        return format_html('<a href="{}">study page</a>', reverse("dashboard:study", args=[study.slug]))


admin.site.unregister(Study)
admin.site.register(Study, StudyWithPageAdmin)


class WorkerExclusionAdmin(WorkerAdmin):
    """The worker admin's exclusion is the workers page's (`quality.services.set_excluded`): it
    stands here because only the top floor sees that service."""

    actions = [*WorkerAdmin.actions, "exclude_workers", "include_workers"]

    @admin.action(
        description="Exclude selected workers in your teams (their labels leave your datasets' gold labels)",
        permissions=["exclude"],
    )
    def exclude_workers(self, request: HttpRequest, queryset: QuerySet[Worker]) -> None:
        self._set_excluded(request, queryset, excluded=True)

    @admin.action(description="Include selected workers again in your teams", permissions=["exclude"])
    def include_workers(self, request: HttpRequest, queryset: QuerySet[Worker]) -> None:
        self._set_excluded(request, queryset, excluded=False)

    def has_exclude_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm(EXCLUDE_WORKERS)

    def _set_excluded(self, request: HttpRequest, queryset: QuerySet[Worker], *, excluded: bool) -> None:
        teams = access.teams_acted_on(request.user, access.RESEARCH)
        chosen = list(queryset.values_list("pk", flat=True))
        outcome = (
            quality_services.set_excluded(chosen, excluded, teams=teams, by=request.user, reason="the admin's action")
            if chosen and teams
            else ExclusionOutcome(changed=0)
        )
        verb = "excluded" if excluded else "included again"
        if outcome.changed:
            self.message_user(
                request,
                f"{outcome.changed} worker(s) {verb} in {len(teams)} team(s); "
                f"gold labels recounted ({outcome.pairs_fixed} pair(s) changed).",
                messages.SUCCESS,
            )
        else:
            self.message_user(request, f"No worker changed: all were already {verb}.", messages.INFO)


admin.site.unregister(Worker)
admin.site.register(Worker, WorkerExclusionAdmin)


class PairMarkingAdmin(PairAdmin):
    """Marking pairs for validation is validation's service, as the dashboard's marking is."""

    actions = ["mark_for_validation", "unmark_for_validation"]

    @admin.action(description="Mark selected pairs for validation")
    def mark_for_validation(self, request: HttpRequest, queryset: QuerySet[Pair]) -> None:
        changed = validation_services.mark_for_validation(queryset)
        self.message_user(request, f"{changed} pair(s) now need validation.", messages.SUCCESS)

    @admin.action(description="Unmark selected pairs for validation")
    def unmark_for_validation(self, request: HttpRequest, queryset: QuerySet[Pair]) -> None:
        changed = corpus_services.set_needs_validation(queryset, False)
        self.message_user(request, f"{changed} pair(s) no longer need validation.", messages.SUCCESS)


admin.site.unregister(Pair)
admin.site.register(Pair, PairMarkingAdmin)


# Teams: their admin; and every admin behind the common door (dashboard/admin_teams.py).
admin.site.register(Team, TeamAdmin)
TEAM_PATHS = guard_every_admin(admin.site)
