from django.contrib import admin
from django.db.models import Model
from django.http import HttpRequest

from .models import BonusBatch, BonusPayment, MarketCall, MarketConnection, SessionReview, WebhookDelivery


@admin.register(MarketConnection)
class MarketConnectionAdmin(admin.ModelAdmin[MarketConnection]):
    list_display = ["study", "market", "market_study_id", "hit_type_id", "mturk_live", "last_check"]
    # The sealed fields are never shown, not even sealed; the dashboard's form changes them.
    exclude = ["sealed_credentials", "sealed_webhook_secret"]
    readonly_fields = ["webhook_key", "last_check", "last_checked_at"]


@admin.register(MarketCall)
class MarketCallAdmin(admin.ModelAdmin[MarketCall]):
    list_display = ["created_at", "connection", "action", "status_code", "ok", "error"]
    list_filter = ["action", "ok"]

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BonusPayment)
class BonusPaymentAdmin(admin.ModelAdmin[BonusPayment]):
    list_display = ["earned", "payer", "state", "batch", "attempts", "last_error", "sent_at"]
    list_filter = ["state"]

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


@admin.register(BonusBatch)
class BonusBatchAdmin(admin.ModelAdmin[BonusBatch]):
    list_display = ["market_bulk_id", "connection", "state", "pay_sent_at", "confirmed_at"]

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


admin.site.register(SessionReview)
admin.site.register(WebhookDelivery)
