"""The markets' own endpoint: Prolific's webhooks. The researcher's pages are the dashboard's
(dashboard/views/markets.py)."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from . import services

# Prolific signs each request over its timestamp and raw body (docs/markets.md).
MAX_BODY_BYTES = 64 * 1024


@csrf_exempt  # a market's server posts here; the HMAC signature is the check, not a browser cookie
@require_POST
def prolific_webhook(request: HttpRequest, key: str) -> JsonResponse:
    body = request.body[: MAX_BODY_BYTES + 1]
    if len(body) > MAX_BODY_BYTES:
        return JsonResponse({"detail": "Body too large."}, status=413)
    try:
        outcome = services.receive_prolific_webhook(
            key,
            body,
            request.headers.get("X-Prolific-Request-Timestamp", ""),
            request.headers.get("X-Prolific-Request-Signature", ""),
        )
    except services.WebhookRefused as refused:
        return JsonResponse({"detail": str(refused)}, status=refused.status)
    return JsonResponse({"detail": outcome})
