"""The markets' own endpoint: Prolific's webhooks. The researcher's pages are the dashboard's
(dashboard/views/markets.py)."""

from django.conf import settings
from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import events


def _too_large(limit: int) -> JsonResponse:
    return JsonResponse(
        {"detail": f"Body too large: a webhook may carry at most {limit} bytes (MARKET_WEBHOOK_MAX_BYTES)."}, status=413
    )


@csrf_exempt  # a market's server posts here; the HMAC signature is the check, not a browser cookie
@require_POST
def prolific_webhook(request: HttpRequest, key: str) -> JsonResponse:
    # Prolific signs each request over its timestamp and raw body (docs/markets.md). The size is
    # judged before a byte of the body is read: request.body would read it all first (and past
    # DATA_UPLOAD_MAX_MEMORY_SIZE raise, logging a traceback), so the announced length decides,
    # and what is read stops one byte past the limit whatever the client announced.
    limit = int(settings.MARKET_WEBHOOK_MAX_BYTES)
    announced = request.META.get("CONTENT_LENGTH") or "0"
    if not announced.isascii() or not announced.isdigit():
        return JsonResponse({"detail": "Content-Length must be a whole number of bytes."}, status=400)
    if int(announced) > limit:
        return _too_large(limit)
    body = request.read(limit + 1)
    if len(body) > limit:
        return _too_large(limit)
    try:
        outcome = events.receive_prolific_webhook(
            key,
            body,
            request.headers.get("X-Prolific-Request-Timestamp", ""),
            request.headers.get("X-Prolific-Request-Signature", ""),
        )
    except events.WebhookRefused as refused:
        return JsonResponse({"detail": str(refused)}, status=refused.status)
    return JsonResponse({"detail": outcome})
