"""Template context every page gets from the crowd app."""

from django.http import HttpRequest

from .services import take_saved_drafts


def saved_drafts(request: HttpRequest) -> dict[str, str]:
    """Drafts the server has just saved, for <body data-saved-drafts>: the browser drops its copies."""
    return {"saved_drafts": " ".join(take_saved_drafts(request))}
