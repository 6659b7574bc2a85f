"""Admin for validation labels and claims (researchers only).

Labels are read only here: each one moves its pair's counters, so they change only through
`validation.services`, in the same transaction as the counters.
"""
from django.contrib import admin

from collection.admin import GoldLabelFilter, short

from .models import ValidationClaim, ValidationLabel, ValidationPolicy


class PositionFilter(admin.SimpleListFilter):
    title = "label of"
    parameter_name = "position"

    def lookups(self, request, model_admin):
        return [("author", "the author (position 1)"), ("validator", "a validator (positions 2–5)")]

    def queryset(self, request, queryset):
        if self.value() == "author":
            return queryset.filter(position=1)
        if self.value() == "validator":
            return queryset.filter(position__gte=2)
        return queryset


class PairGoldFilter(GoldLabelFilter):
    field = "pair__gold_label"


@admin.register(ValidationLabel)
class ValidationLabelAdmin(admin.ModelAdmin):
    list_display = ["pair_link", "position", "label", "gold_label", "worker", "seconds", "created_at"]
    list_filter = ["label", PositionFilter, PairGoldFilter, "pair__dataset", "worker__is_excluded"]
    list_select_related = ["pair", "worker__user"]
    search_fields = ["pair__pair_id", "pair__premise__prompt_id", "worker__external_id", "worker__user__username"]
    show_full_result_count = False
    list_per_page = 50

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False

    @admin.display(description="pair", ordering="pair__pair_id")
    def pair_link(self, label):
        return label.pair.pair_id

    @admin.display(description="pair's gold")
    def gold_label(self, label):
        return label.pair.gold_label


@admin.register(ValidationClaim)
class ValidationClaimAdmin(admin.ModelAdmin):
    list_display = ["id", "batch", "worker", "pair_id_text", "status", "created_at", "expires_at", "submitted_at"]
    list_filter = ["status", "pair__dataset"]
    list_select_related = ["pair", "worker__user"]
    search_fields = ["batch", "pair__pair_id", "worker__external_id", "worker__user__username"]
    autocomplete_fields = ["worker", "pair", "study_session"]
    readonly_fields = ["batch", "created_at", "submitted_at"]
    show_full_result_count = False

    @admin.display(description="pair", ordering="pair__pair_id")
    def pair_id_text(self, claim):
        return f"{claim.pair.pair_id}: {short(claim.pair.hypothesis, 8)}"




@admin.register(ValidationPolicy)
class ValidationPolicyAdmin(admin.ModelAdmin):
    list_display = ["dataset", "trusted_only"]
    list_filter = ["trusted_only"]
    list_select_related = ["dataset"]
    autocomplete_fields = ["dataset"]
