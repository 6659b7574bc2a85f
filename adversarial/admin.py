from django.contrib import admin

from .models import AdversarialStudy, AdversarialTry, Round, VerifierTie


@admin.register(AdversarialStudy)
class AdversarialStudyAdmin(admin.ModelAdmin):
    list_display = ("study", "max_tries", "bonus_per_verified_fooled", "tries_per_minute")


@admin.register(Round)
class RoundAdmin(admin.ModelAdmin):
    list_display = ("study", "number", "status", "target_run", "target_endpoint", "next_run", "next_test_accuracy")
    list_filter = ("status",)
    readonly_fields = ("round_snapshot", "training_snapshot", "next_run", "next_test_accuracy", "next_test_examples")


class VerifierTieInline(admin.TabularInline):
    """Verifiers whose labels were not counted for the try, and whom they were tied to (verification.Ties)."""

    model = VerifierTie
    fields = ("verifier", "tied_to", "kind", "created_at")
    readonly_fields = fields
    extra = 0
    can_delete = False

    def has_add_permission(self, request, obj=None):
        return False


@admin.register(AdversarialTry)
class AdversarialTryAdmin(admin.ModelAdmin):
    inlines = (VerifierTieInline,)
    list_display = ("task", "number", "round", "predicted_label", "model_fooled", "verification", "created_at")
    list_filter = ("model_fooled", "verification", "round")
    search_fields = ("hypothesis",)

    def has_change_permission(self, request, obj=None):
        return False  # tries are what the model answered: never edited

    def has_delete_permission(self, request, obj=None):
        return False
