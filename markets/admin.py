from typing import Any

from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import BonusBatch, BonusPayment, MarketCall, MarketConnection, SessionReview, WebhookDelivery


@admin.register(MarketConnection)
class MarketConnectionAdmin(admin.ModelAdmin[MarketConnection]):
    list_display = ["study", "market", "market_study_id", "hit_type_id", "mturk_live", "last_check_ok", "last_check"]
    # The sealed fields are never shown, not even sealed; the dashboard's form changes them.
    exclude = ["sealed_credentials", "sealed_webhook_secret"]
    readonly_fields = ["webhook_key", "last_check_ok", "last_check", "last_checked_at"]


@admin.register(MarketCall)
class MarketCallAdmin(admin.ModelAdmin[MarketCall]):
    list_display = ["created_at", "connection", "action", "status_code", "ok", "error"]
    list_filter = ["action", "ok"]

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


class ReadOnlyMoneyAdmin(admin.ModelAdmin[Any]):
    """Money in flight is moved only by markets.payments: deleting a payment row would make its
    bonus owed again while the market may have paid it (an unsettled "not paid")."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BonusPayment)
class BonusPaymentAdmin(ReadOnlyMoneyAdmin):
    list_display = ["earned", "payer", "state", "batch", "attempts", "last_error", "sent_at", "record_read_at"]
    list_filter = ["state"]


@admin.register(BonusBatch)
class BonusBatchAdmin(ReadOnlyMoneyAdmin):
    list_display = ["market_bulk_id", "connection", "state", "pay_sent_at", "record_read_at", "confirmed_at"]


admin.site.register(SessionReview)
admin.site.register(WebhookDelivery)
