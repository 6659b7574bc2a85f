"""Admin of quality control: reference labels and catch trials (listed, filterable), catch-trial
answers and the bonus ledger (read only: the ledger is append-only, paid through the dashboard)."""

from typing import Any, cast

from django.contrib import admin
from django.contrib.auth.models import User
from django.http import HttpRequest

from corpus.admin_base import ReadOnlyAdmin

from .models import BonusEntry, CatchTrialAnswer, ReferenceLabel


@admin.register(ReferenceLabel)
class ReferenceLabelAdmin(admin.ModelAdmin[ReferenceLabel]):
    list_display = ["pair", "label", "is_catch_trial", "labelled_by", "note", "updated_at"]
    list_filter = ["is_catch_trial", "label", "pair__dataset"]
    list_editable = ["is_catch_trial"]
    search_fields = ["pair__pair_id"]
    autocomplete_fields = ["pair"]
    list_select_related = ["pair", "labelled_by"]
    readonly_fields = ["labelled_by", "created_at", "updated_at"]

    def save_model(self, request: HttpRequest, obj: ReferenceLabel, form: Any, change: bool) -> None:
        if not change:
            obj.labelled_by = cast(User, request.user)  # the admin admits signed-in staff only
        super().save_model(request, obj, form, change)


@admin.register(CatchTrialAnswer)
class CatchTrialAnswerAdmin(ReadOnlyAdmin[CatchTrialAnswer], admin.ModelAdmin[CatchTrialAnswer]):
    list_display = ["worker", "pair", "label", "expected", "matched", "study_session", "created_at"]
    list_filter = ["matched"]
    list_select_related = ["worker__user", "pair", "study_session"]
    show_full_result_count = False


@admin.register(BonusEntry)
class BonusEntryAdmin(ReadOnlyAdmin[BonusEntry], admin.ModelAdmin[BonusEntry]):
    list_display = [
        "created_at",
        "kind",
        "worker",
        "study",
        "study_session",
        "pair",
        "amount",
        "currency",
        "cause",
        "reason",
        "pays",
    ]
    list_filter = ["kind", "cause", "study", "currency"]
    list_select_related = ["worker__user", "study", "study_session", "pair", "pays"]
    show_full_result_count = False


# The qualification admins, registered with this module (admin autodiscovery, in INSTALLED_APPS
# order) so that dashboard/admin.py, which comes later, narrows them to the user's teams.
from . import admin_qualification  # noqa: E402, F401
