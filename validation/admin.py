"""Admin of validation claims and policies (researchers only). Labels are the core's (corpus.admin_pairs)."""

from django.contrib import admin

from corpus.admin_base import short

from .models import PremiseLabel, PremisePair, ValidationClaim, ValidationPolicy


@admin.register(ValidationClaim)
class ValidationClaimAdmin(admin.ModelAdmin[ValidationClaim]):
    list_display = ["id", "batch", "worker", "pair_id_text", "status", "created_at", "expires_at", "submitted_at"]
    list_filter = ["status", "pair__dataset"]
    list_select_related = ["pair", "worker__user"]
    search_fields = ["batch", "pair__pair_id", "worker__external_id", "worker__user__username"]
    autocomplete_fields = ["worker", "pair", "study_session"]
    readonly_fields = ["batch", "created_at", "submitted_at"]
    show_full_result_count = False

    @admin.display(description="pair", ordering="pair__pair_id")
    def pair_id_text(self, claim: ValidationClaim) -> str:
        return f"{claim.pair.pair_id}: {short(claim.pair.hypothesis, words=8)}"


@admin.register(ValidationPolicy)
class ValidationPolicyAdmin(admin.ModelAdmin[ValidationPolicy]):
    list_display = ["dataset", "trusted_only"]
    list_filter = ["trusted_only"]
    list_select_related = ["dataset"]
    autocomplete_fields = ["dataset"]


@admin.register(PremisePair)
class PremisePairAdmin(admin.ModelAdmin[PremisePair]):
    """MPE's per-premise pairs: marked with `manage.py mark_premise_labels`; counts moved by labels only."""

    list_display = ["id", "item", "index", "label_count", "consensus"]
    list_filter = ["consensus", "label_count", "item__dataset"]
    list_select_related = ["item"]
    search_fields = ["item__pair_id"]
    readonly_fields = [
        "item",
        "index",
        "label_count",
        "entailment_votes",
        "neutral_votes",
        "contradiction_votes",
        "consensus",
        "created_at",
    ]
    show_full_result_count = False


@admin.register(PremiseLabel)
class PremiseLabelAdmin(admin.ModelAdmin[PremiseLabel]):
    list_display = ["id", "premise_pair", "worker", "label", "created_at"]
    list_filter = ["label", "premise_pair__item__dataset"]
    list_select_related = ["premise_pair__item", "worker__user"]
    search_fields = ["premise_pair__item__pair_id", "worker__external_id", "worker__user__username"]
    readonly_fields = ["premise_pair", "worker", "label", "seconds", "created_at"]
    show_full_result_count = False
