"""Template context every page gets from the crowd app."""

from django.http import HttpRequest
from django.urls import reverse

from .preview import previewed_session
from .services import take_saved_drafts


def saved_drafts(request: HttpRequest) -> dict[str, str]:
    """Drafts the server has just saved, for <body data-saved-drafts>: the browser drops its copies."""
    return {"saved_drafts": " ".join(take_saved_drafts(request))}


def preview(request: HttpRequest) -> dict[str, object]:
    """The study a researcher is previewing (crowd.preview), for the banner every page shows then."""
    session = previewed_session(request) if hasattr(request, "session") else None
    if session is None:
        return {}
    # The URL too: base.html belongs to the base layer, which names no crowd URL.
    return {"preview_study": session.study, "preview_end_url": reverse("preview_end")}
