from typing import Any

from rest_framework.permissions import BasePermission


def is_researcher(user: Any) -> bool:
    """Researchers are staff accounts; crowdworkers never are."""
    return bool(user and user.is_authenticated and user.is_active and user.is_staff)


class IsResearcher(BasePermission):
    message = "Researcher rights are required."

    def has_permission(self, request, view):
        return is_researcher(request.user)
