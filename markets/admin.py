from django.contrib import admin

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

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BonusPayment)
class BonusPaymentAdmin(admin.ModelAdmin[BonusPayment]):
    list_display = ["earned", "state", "batch", "attempts", "last_error", "confirmed_at"]
    list_filter = ["state"]

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(BonusBatch)
class BonusBatchAdmin(admin.ModelAdmin[BonusBatch]):
    list_display = ["market_bulk_id", "connection", "state", "pay_sent_at", "confirmed_at"]

    def has_change_permission(self, request, obj=None):
        return False


admin.site.register(SessionReview)
admin.site.register(WebhookDelivery)
