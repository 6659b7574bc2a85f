"""The type of a request behind `login_required` (or any check that refuses anonymous visitors).

Django types `request.user` as an account or AnonymousUser; a view that only signed-in accounts
reach annotates its request as `AuthenticatedRequest`, so `request.user` is the account (a
`User`) without a check at every use. Only a type: the request is Django's own at run time.
"""

from typing import TypeGuard

from django.contrib.auth.models import User
from django.http import HttpRequest


class AuthenticatedRequest(HttpRequest):
    user: User


def is_authenticated(request: HttpRequest) -> TypeGuard[AuthenticatedRequest]:
    """`request.user.is_authenticated`, for a view that answers anonymous visitors itself (a JSON
    403, not the login page): past `if not is_authenticated(request): return ...` the request is
    an `AuthenticatedRequest`."""
    return request.user.is_authenticated
