"""Admin for the collection app: researchers only (the site checks is_staff; the middleware 403s workers).

Lists stay fast on half a million pairs: related rows come in the same query
(list_select_related), foreign keys use autocomplete instead of <select>s of every row,
big tables skip the full COUNT(*) (show_full_result_count=False), and filters on counters
offer fixed choices instead of a SELECT DISTINCT over the whole table.
"""
from django.contrib import admin, messages
from django.db.models import Count
from django.urls import reverse
from django.utils.html import format_html
from django.utils.text import Truncator

from dashboard import services as dashboard_services
from validation.models import ValidationLabel

from .models import (
    NO_GOLD,
    Dataset,
    FaqEntry,
    Genre,
    Label,
    Pair,
    Premise,
    PremiseImport,
    PremiseReport,
    PremiseStatus,
    PromptExample,
    PromptFamily,
    Study,
    StudySession,
    Worker,
    WritingClaim,
)


def short(text, words=14):
    return Truncator(text).words(words)


class FixedChoicesFilter(admin.SimpleListFilter):
    """A filter whose choices are known in advance, so Django never scans the table for them."""

    field = None
    options = ()  # (value, label); not `choices`, which is SimpleListFilter's own method

    def lookups(self, request, model_admin):
        return [(str(value), label) for value, label in self.options]

    def queryset(self, request, queryset):
        if self.value() is None:
            return queryset
        return queryset.filter(**{self.field: self.value()})


class GoldLabelFilter(FixedChoicesFilter):
    title = "gold label"
    parameter_name = "gold_label"
    field = "gold_label"
    options = [(label.value, label.label) for label in Label] + [(NO_GOLD, "no gold label (-)")]


class LabelCountFilter(FixedChoicesFilter):
    title = "labels so far"
    parameter_name = "label_count"
    field = "label_count"
    options = [(n, f"{n} of 5") for n in range(0, 6)]


class PairSplitFilter(FixedChoicesFilter):
    title = "split"
    parameter_name = "split"
    field = "premise__split"
    options = [("train", "train"), ("dev", "dev"), ("test", "test")]


# --- prompts and genres ------------------------------------------------------------------------

class PromptExampleInline(admin.StackedInline):
    model = PromptExample
    extra = 0
    max_num = 3


class FaqEntryInline(admin.StackedInline):
    model = FaqEntry
    extra = 0


@admin.register(PromptFamily)
class PromptFamilyAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "genre_list"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [PromptExampleInline, FaqEntryInline]

    def get_queryset(self, request):
        return super().get_queryset(request).prefetch_related("genres")

    @admin.display(description="genres")
    def genre_list(self, family):
        return ", ".join(genre.slug for genre in family.genres.all())


@admin.register(Genre)
class GenreAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "is_training", "family"]
    list_filter = ["is_training", "family"]
    list_select_related = ["family"]
    search_fields = ["slug", "name"]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "label_scheme", "is_imported", "train_validation_fraction", "writings_per_premise"]
    list_filter = ["label_scheme", "is_imported"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at", "premise_count", "pair_count"]

    @admin.display(description="premises")
    def premise_count(self, dataset):
        return dataset.premises.count() if dataset.pk else 0

    @admin.display(description="pairs")
    def pair_count(self, dataset):
        return dataset.pairs.count() if dataset.pk else 0


# --- premises ------------------------------------------------------------------------------------

class PairInline(admin.TabularInline):
    """The pairs written for a premise, read only: pairs change through writing and validation."""

    model = Pair
    fields = ["pair_id", "hypothesis", "author_label", "author", "label_count", "gold_label", "needs_validation"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(Premise)
class PremiseAdmin(admin.ModelAdmin):
    list_display = ["prompt_id", "short_text", "dataset", "genre", "split", "status", "writings_done"]
    list_filter = ["dataset", "genre", "split", "status"]
    list_select_related = ["dataset", "genre"]
    search_fields = ["prompt_id", "text"]
    readonly_fields = ["text_hash", "writings_done", "created_at"]
    show_full_result_count = False
    list_per_page = 50
    actions = ["hold_premises", "release_premises"]
    inlines = [PairInline]

    @admin.display(description="text")
    def short_text(self, premise):
        return short(premise.text)

    @admin.action(description="Hold selected premises (no new writing tasks)")
    def hold_premises(self, request, queryset):
        held = dashboard_services.hold_premises(queryset)
        self.message_user(request, f"{held} premise(s) held.", messages.SUCCESS)

    @admin.action(description="Release selected premises (and resolve their reports)")
    def release_premises(self, request, queryset):
        released, resolved = dashboard_services.release_premises(queryset)
        self.message_user(
            request, f"{released} premise(s) released; {resolved} report(s) resolved.", messages.SUCCESS
        )


class ImportRunAdmin(admin.ModelAdmin):
    """Read-only: import rows are written by the import commands as they run."""

    @admin.display(description="read")
    def percent_read(self, obj):
        return f"{100 * obj.progress:.0f}%"

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(PremiseImport)
class PremiseImportAdmin(ImportRunAdmin):
    list_display = ("source", "dataset", "genre", "status", "percent_read", "sentences_read", "kept", "dropped",
                    "started_at", "finished_at")
    list_filter = ("status", "genre", "dataset")
    list_select_related = ("dataset", "genre")


@admin.register(PremiseReport)
class PremiseReportAdmin(admin.ModelAdmin):
    list_display = ["created_at", "premise_link", "worker", "short_message", "resolved"]
    list_filter = ["resolved", "premise__dataset", "premise__genre"]
    list_select_related = ["premise", "worker__user"]
    search_fields = ["message", "premise__prompt_id", "premise__text", "worker__external_id", "worker__user__username"]
    autocomplete_fields = ["premise", "worker"]
    readonly_fields = ["created_at"]
    actions = ["resolve_and_release"]

    @admin.display(description="premise")
    def premise_link(self, report):
        url = reverse("admin:collection_premise_change", args=[report.premise_id])
        return format_html('<a href="{}">{}</a>', url, short(report.premise.text, 10))

    @admin.display(description="message")
    def short_message(self, report):
        return short(report.message)

    @admin.action(description="Resolve selected reports and release their premises")
    def resolve_and_release(self, request, queryset):
        premises = Premise.objects.filter(pk__in=queryset.values("premise_id"), status=PremiseStatus.HELD)
        released, resolved = dashboard_services.release_premises(premises)
        resolved += queryset.filter(resolved=False).update(resolved=True)
        self.message_user(request, f"{resolved} report(s) resolved; {released} premise(s) released.", messages.SUCCESS)


# --- workers and studies -------------------------------------------------------------------------

@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin):
    list_display = ["__str__", "username", "market", "external_id", "is_trusted", "is_excluded", "created_at"]
    list_filter = ["market", "is_trusted", "is_excluded"]
    list_select_related = ["user"]
    search_fields = ["external_id", "user__username"]
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at", "pairs_written", "labels_given"]
    actions = ["trust_workers", "untrust_workers", "exclude_workers", "include_workers"]

    @admin.display(description="username", ordering="user__username")
    def username(self, worker):
        return worker.user.get_username()

    @admin.display(description="pairs written")
    def pairs_written(self, worker):
        return worker.pairs.count() if worker.pk else 0

    @admin.display(description="validation labels given")
    def labels_given(self, worker):
        return worker.labels.filter(position__gte=2).count() if worker.pk else 0

    @admin.action(description="Trust selected workers (closed validation pool)")
    def trust_workers(self, request, queryset):
        self.message_user(request, f"{queryset.update(is_trusted=True)} worker(s) trusted.", messages.SUCCESS)

    @admin.action(description="Untrust selected workers")
    def untrust_workers(self, request, queryset):
        self.message_user(request, f"{queryset.update(is_trusted=False)} worker(s) no longer trusted.", messages.SUCCESS)

    @admin.action(description="Exclude selected workers' labels (gold labels need a recompute)")
    def exclude_workers(self, request, queryset):
        self._set_excluded(request, queryset, True)

    @admin.action(description="Include selected workers' labels again")
    def include_workers(self, request, queryset):
        self._set_excluded(request, queryset, False)

    def _set_excluded(self, request, queryset, excluded):
        outcome = dashboard_services.set_workers_excluded(queryset, excluded)
        verb = "excluded" if excluded else "included again"
        if outcome.recomputed:
            self.message_user(
                request,
                f"{outcome.changed} worker(s) {verb}; gold labels recomputed "
                f"({getattr(outcome.recompute_report, 'fixed', '?')} pair(s) changed).",
                messages.SUCCESS,
            )
        elif outcome.changed:
            self.message_user(
                request,
                f"{outcome.changed} worker(s) {verb}. Gold labels and statistics still count the old labels: "
                f"run a gold-label recompute.",
                messages.WARNING,
            )
        else:
            self.message_user(request, f"No worker changed: all were already {verb}.", messages.INFO)


class StudySessionInline(admin.TabularInline):
    model = StudySession
    fields = ["worker", "external_session_id", "tasks_done", "started_at", "completed_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    show_change_link = True
    max_num = 0


@admin.register(Study)
class StudyAdmin(admin.ModelAdmin):
    list_display = ["slug", "name", "dataset", "task_kind", "tasks_per_batch", "is_active", "session_count"]
    list_filter = ["dataset", "task_kind", "is_active"]
    list_select_related = ["dataset"]
    search_fields = ["slug", "name"]
    prepopulated_fields = {"slug": ["name"]}
    readonly_fields = ["created_at"]

    def get_queryset(self, request):
        return super().get_queryset(request).annotate(_sessions=Count("sessions"))

    @admin.display(description="sessions", ordering="_sessions")
    def session_count(self, study):
        return study._sessions


@admin.register(StudySession)
class StudySessionAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "worker", "external_session_id", "tasks_done", "started_at", "completed_at"]
    list_filter = ["study", "worker__market"]
    list_select_related = ["study", "worker__user"]
    search_fields = ["external_session_id", "external_study_id", "worker__external_id", "worker__user__username"]
    autocomplete_fields = ["study", "worker"]
    readonly_fields = ["tasks_done", "started_at"]
    show_full_result_count = False


@admin.register(WritingClaim)
class WritingClaimAdmin(admin.ModelAdmin):
    list_display = ["token", "worker", "premise", "status", "created_at", "expires_at", "submitted_at", "seconds"]
    list_filter = ["status", "premise__dataset", "premise__genre"]
    list_select_related = ["worker__user", "premise"]
    search_fields = ["token", "worker__external_id", "worker__user__username", "premise__prompt_id"]
    autocomplete_fields = ["worker", "premise", "study_session"]
    readonly_fields = ["token", "created_at", "submitted_at", "seconds"]
    show_full_result_count = False

    @admin.display(description="seconds taken")
    def seconds(self, claim):
        taken = claim.seconds_taken
        return None if taken is None else round(taken)


# --- pairs -----------------------------------------------------------------------------------------

class ValidationLabelInline(admin.TabularInline):
    """Every label of the pair, the author's first; read only because labels move the pair's counters."""

    model = ValidationLabel
    fields = ["position", "label", "worker", "seconds", "created_at"]
    readonly_fields = fields
    extra = 0
    can_delete = False
    max_num = 0

    def has_add_permission(self, request, obj=None):
        return False

    def get_queryset(self, request):
        return super().get_queryset(request).select_related("worker__user")


@admin.register(Pair)
class PairAdmin(admin.ModelAdmin):
    list_display = [
        "pair_id", "short_hypothesis", "dataset", "genre", "split", "author_label",
        "label_count", "gold_label", "needs_validation",
    ]
    list_filter = ["dataset", "premise__genre", PairSplitFilter, GoldLabelFilter, "author_label",
                   "needs_validation", LabelCountFilter]
    list_select_related = ["dataset", "premise__genre"]
    search_fields = ["pair_id", "hypothesis", "premise__prompt_id", "premise__text"]
    autocomplete_fields = ["premise", "author", "writing_claim"]
    readonly_fields = [
        "premise_text", "author_label", "author", "writing_claim", "created_at", "label_count",
        "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label",
    ]
    fields = ["dataset", "pair_id", "premise", "premise_text", "hypothesis", "parse", "binary_parse",
              "author_label", "author", "writing_claim", "created_at", "needs_validation", "label_count",
              "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label"]
    show_full_result_count = False
    list_per_page = 50
    inlines = [ValidationLabelInline]
    actions = ["mark_for_validation", "unmark_for_validation"]

    def has_add_permission(self, request):
        # A pair is born with its author's label row and counters (writing task or import), never by hand.
        return False

    def get_readonly_fields(self, request, obj=None):
        if obj is not None:
            return [*self.readonly_fields, "dataset", "premise"]
        return self.readonly_fields

    @admin.display(description="hypothesis")
    def short_hypothesis(self, pair):
        return short(pair.hypothesis)

    @admin.display(description="genre", ordering="premise__genre__slug")
    def genre(self, pair):
        return pair.premise.genre.slug

    @admin.display(description="split", ordering="premise__split")
    def split(self, pair):
        return pair.premise.split

    @admin.display(description="premise text")
    def premise_text(self, pair):
        return pair.premise.text

    @admin.action(description="Mark selected pairs for validation")
    def mark_for_validation(self, request, queryset):
        changed = dashboard_services.set_needs_validation(queryset, True)
        self.message_user(request, f"{changed} pair(s) now need validation.", messages.SUCCESS)

    @admin.action(description="Unmark selected pairs for validation")
    def unmark_for_validation(self, request, queryset):
        changed = dashboard_services.set_needs_validation(queryset, False)
        self.message_user(request, f"{changed} pair(s) no longer need validation.", messages.SUCCESS)
