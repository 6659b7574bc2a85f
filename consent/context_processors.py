"""Template context every page gets from the consent app: the quiet "withdraw from this study" link."""

from django.http import HttpRequest
from django.urls import reverse

from crowd.arrival import SESSION_KEY

from .views import WITHDRAWN_KEY


def withdraw_link(request: HttpRequest) -> dict[str, str]:
    """The withdraw page's URL while this browser is in a study visit it has not withdrawn from.
    Read from the Django session alone, no query: the page itself checks the visit."""
    session = getattr(request, "session", None)
    if session is None or not request.user.is_authenticated:
        return {}
    visit = session.get(SESSION_KEY)
    if not visit or session.get(WITHDRAWN_KEY) == visit:
        return {}
    # The URL too: base.html belongs to the base layer, which names no consent URL.
    return {"withdraw_url": reverse("consent:withdraw")}
