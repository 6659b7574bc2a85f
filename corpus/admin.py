"""Admin of the core's models (researchers only: the site checks is_staff; the middleware 403s workers):
prompts, genres, datasets, stopping policies and workers here; pairs and labels in corpus.admin_pairs,
the bases the apps' admins share in corpus.admin_base.

Lists stay fast: related rows come in the same query (list_select_related), foreign keys use
autocomplete instead of <select>s of every row.
"""

from typing import Any

from django.contrib import admin, messages
from django.contrib.postgres.aggregates import StringAgg
from django.db.models import OuterRef, QuerySet, Subquery
from django.http import HttpRequest

from teams import access

from . import exclusions, stopping_policies
from .models import (
    AUTHOR_POSITION,
    Dataset,
    FaqEntry,
    Genre,
    PromptExample,
    PromptFamily,
    StoppingPolicy,
    Worker,
    WorkerExclusion,
)

# --- prompts and genres ------------------------------------------------------------------------


class PromptExampleInline(admin.StackedInline[PromptExample, PromptFamily]):
    model = PromptExample
    extra = 0
    max_num = 3


class FaqEntryInline(admin.StackedInline[FaqEntry, PromptFamily]):
    model = FaqEntry
    extra = 0


@admin.register(PromptFamily)
class PromptFamilyAdmin(admin.ModelAdmin[PromptFamily]):
    list_display = ["name", "slug", "genre_list"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    inlines = [PromptExampleInline, FaqEntryInline]

    def get_queryset(self, request: HttpRequest) -> QuerySet[PromptFamily]:
        return super().get_queryset(request).prefetch_related("genres")

    @admin.display(description="genres")
    def genre_list(self, family: PromptFamily) -> str:
        return ", ".join(genre.slug for genre in family.genres.all())


@admin.register(Genre)
class GenreAdmin(admin.ModelAdmin[Genre]):
    list_display = ["slug", "name", "is_training", "family"]
    list_filter = ["is_training", "family"]
    list_select_related = ["family"]
    search_fields = ["slug", "name"]


@admin.register(Dataset)
class DatasetAdmin(admin.ModelAdmin[Dataset]):
    list_display = [
        "slug",
        "name",
        "label_scheme",
        "item_kind",
        "is_imported",
        "train_validation_fraction",
        "writings_per_premise",
    ]
    list_filter = ["label_scheme", "item_kind", "is_imported"]
    search_fields = ["slug", "name"]
    readonly_fields = ["created_at", "premise_count", "pair_count"]

    @admin.display(description="premises")
    def premise_count(self, dataset: Dataset) -> int:
        return dataset.premises.count() if dataset.pk else 0

    @admin.display(description="pairs")
    def pair_count(self, dataset: Dataset) -> int:
        return dataset.pairs.count() if dataset.pk else 0

    def save_model(self, request: HttpRequest, obj: Dataset, form: Any, change: bool) -> None:
        moved = change and "team" in form.changed_data
        super().save_model(request, obj, form, change)
        if moved:  # its labels follow the new team's exclusions, not the old one's
            exclusions.follow_team_exclusions(obj)


@admin.register(StoppingPolicy)
class StoppingPolicyAdmin(admin.ModelAdmin[StoppingPolicy]):
    """The stopping rule of a dataset's split (docs/quality.md "Stopping rules"). Saving
    one records the rule on the split's pairs still taking labels and stops those already settled
    under the decided rule; deleting one puts the split back on the fixed rule."""

    list_display = ["dataset", "split", "rule", "threshold", "max_labels", "updated_at"]
    list_filter = ["rule", "split"]
    fields = ["dataset", "split", "rule", "threshold", "max_labels"]

    def save_model(self, request: HttpRequest, obj: StoppingPolicy, form: Any, change: bool) -> None:
        super().save_model(request, obj, form, change)
        changed, stopped = stopping_policies.apply_stopping_policy(obj.dataset, obj.split)
        messages.info(request, f"{changed} pairs now follow the {obj.rule} rule; {stopped} stopped at once.")

    def delete_model(self, request: HttpRequest, obj: StoppingPolicy) -> None:
        dataset, split = obj.dataset, obj.split
        super().delete_model(request, obj)
        stopping_policies.apply_stopping_policy(dataset, split)


# --- workers -------------------------------------------------------------------------------------


@admin.register(Worker)
class WorkerAdmin(admin.ModelAdmin[Worker]):
    list_display = ["__str__", "username", "market", "external_id", "is_trusted", "excluded_in", "created_at"]
    list_filter = ["market", "is_trusted"]
    list_select_related = ["user"]
    search_fields = ["external_id", "user__username"]
    autocomplete_fields = ["user"]
    readonly_fields = ["created_at", "pairs_written", "labels_given"]
    # Excluding a worker is the top floor's action (dashboard/admin.py): it releases their claims too.
    actions = ["trust_workers", "untrust_workers"]

    @admin.display(description="username", ordering="user__username")
    def username(self, worker: Worker) -> str:
        return worker.user.get_username()

    @admin.display(description="excluded in (your teams)")
    def excluded_in(self, worker: Worker) -> str:
        return getattr(worker, "excluded_in_teams", None) or ""

    def get_queryset(self, request: HttpRequest) -> QuerySet[Worker]:
        """Each worker with the user's teams that excluded them (another team's decision is its own)."""
        teams = access.teams_acted_on(request.user, access.VIEW)
        slugs = (
            WorkerExclusion.objects.filter(worker=OuterRef("pk"), team_id__in=teams)
            .order_by()
            .values("worker")
            .annotate(slugs=StringAgg("team__slug", ", ", order_by="team__slug"))
            .values("slugs")
        )
        return super().get_queryset(request).annotate(excluded_in_teams=Subquery(slugs))

    @admin.display(description="pairs written")
    def pairs_written(self, worker: Worker) -> int:
        return worker.pairs.count() if worker.pk else 0

    @admin.display(description="validation labels given")
    def labels_given(self, worker: Worker) -> int:
        return worker.labels.filter(position__gt=AUTHOR_POSITION).count() if worker.pk else 0

    @admin.action(description="Trust selected workers (closed validation pool)", permissions=["change"])
    def trust_workers(self, request: HttpRequest, queryset: QuerySet[Worker]) -> None:
        self.message_user(request, f"{queryset.update(is_trusted=True)} worker(s) trusted.", messages.SUCCESS)

    @admin.action(description="Untrust selected workers", permissions=["change"])
    def untrust_workers(self, request: HttpRequest, queryset: QuerySet[Worker]) -> None:
        self.message_user(
            request, f"{queryset.update(is_trusted=False)} worker(s) no longer trusted.", messages.SUCCESS
        )


# The pair and label admins register themselves on import, as this module does.
from . import admin_pairs  # noqa: E402, F401
