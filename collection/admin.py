"""Admin of the writing side (researchers only): the premise pool, premise imports, reports, claims."""

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html
from django.utils.safestring import SafeString

from corpus.admin_base import ImportRunAdmin, short
from corpus.admin_pairs import PairInline
from corpus.models import Premise, PremiseStatus

from . import premise_pool
from .models import PremiseImport, PremiseReport, WritingClaim


@admin.register(Premise)
class PremiseAdmin(admin.ModelAdmin[Premise]):
    list_display = ["prompt_id", "short_text", "dataset", "genre", "split", "status", "writings_done"]
    list_filter = ["dataset", "genre", "split", "status"]
    list_select_related = ["dataset", "genre"]
    search_fields = ["prompt_id", "text"]
    readonly_fields = ["text_hash", "writings_done", "created_at", "sentences"]
    show_full_result_count = False
    list_per_page = 50
    actions = ["hold_premises", "release_premises"]
    inlines = [PairInline]

    @admin.display(description="text")
    def short_text(self, premise: Premise) -> str:
        return short(premise.text)

    @admin.action(description="Hold selected premises (no new writing tasks)")
    def hold_premises(self, request: HttpRequest, queryset: QuerySet[Premise]) -> None:
        held = premise_pool.hold_premises(queryset, actor=request.user)
        self.message_user(request, f"{held} premise(s) held.", messages.SUCCESS)

    @admin.action(description="Release selected premises (and resolve their reports)")
    def release_premises(self, request: HttpRequest, queryset: QuerySet[Premise]) -> None:
        released, resolved = premise_pool.release_premises(queryset, actor=request.user)
        self.message_user(request, f"{released} premise(s) released; {resolved} report(s) resolved.", messages.SUCCESS)


@admin.register(PremiseImport)
class PremiseImportAdmin(ImportRunAdmin[PremiseImport]):
    list_display = (
        "source",
        "dataset",
        "genre",
        "status",
        "percent_read",
        "sentences_read",
        "kept",
        "dropped",
        "started_at",
        "finished_at",
    )
    list_filter = ("status", "genre", "dataset")
    list_select_related = ("dataset", "genre")


@admin.register(PremiseReport)
class PremiseReportAdmin(admin.ModelAdmin[PremiseReport]):
    list_display = ["created_at", "premise_link", "worker", "short_message", "resolved"]
    list_filter = ["resolved", "premise__dataset", "premise__genre"]
    list_select_related = ["premise", "worker__user"]
    search_fields = ["message", "premise__prompt_id", "premise__text", "worker__external_id", "worker__user__username"]
    autocomplete_fields = ["premise", "worker"]
    readonly_fields = ["created_at"]
    actions = ["resolve_and_release"]

    @admin.display(description="premise")
    def premise_link(self, report: PremiseReport) -> SafeString:
        url = reverse("admin:corpus_premise_change", args=[report.premise_id])
        return format_html('<a href="{}">{}</a>', url, short(report.premise.text, words=10))

    @admin.display(description="message")
    def short_message(self, report: PremiseReport) -> str:
        return short(report.message)

    @admin.action(description="Resolve selected reports and release their premises")
    def resolve_and_release(self, request: HttpRequest, queryset: QuerySet[PremiseReport]) -> None:
        premises = Premise.objects.filter(pk__in=queryset.values("premise_id"), status=PremiseStatus.HELD)
        released, resolved = premise_pool.release_premises(premises, actor=request.user)
        resolved += queryset.filter(resolved=False).update(resolved=True)
        self.message_user(request, f"{resolved} report(s) resolved; {released} premise(s) released.", messages.SUCCESS)


@admin.register(WritingClaim)
class WritingClaimAdmin(admin.ModelAdmin[WritingClaim]):
    list_display = ["token", "worker", "premise", "status", "created_at", "expires_at", "submitted_at", "seconds"]
    list_filter = ["status", "premise__dataset", "premise__genre"]
    list_select_related = ["worker__user", "premise"]
    search_fields = ["token", "worker__external_id", "worker__user__username", "premise__prompt_id"]
    autocomplete_fields = ["worker", "premise", "study_session"]
    readonly_fields = ["token", "created_at", "submitted_at", "seconds"]
    show_full_result_count = False

    @admin.display(description="seconds taken")
    def seconds(self, claim: WritingClaim) -> int | None:
        taken = claim.seconds_taken
        return None if taken is None else round(taken)
