"""The GPU nodes' credential: `Authorization: Worker <key>` (modeling.models.WorkerToken).

A worker token authenticates as a `WorkerNode`, which is no user: it is not staff, so every
researcher endpoint refuses it, and it passes `IsWorkerNode` only, which the worker API and the
snapshot file download accept. A researcher's token or session is not a worker token, so it
cannot act as a worker either.
"""

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission

from annotation_site.permissions import is_researcher
from modeling.models import WorkerToken, hash_worker_key

SCHEME = "Worker"
# How often a token's last_used_at is written (one UPDATE per heartbeat would be wasteful).
LAST_USED_RESOLUTION_SECONDS = 60


class WorkerNode:
    """The principal of a request made with a worker token."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False
    pk = None
    id = None

    def __init__(self, token):
        self.token = token
        self.username = f"worker-token:{token.name}"

    def __str__(self):
        return self.username

    def has_perm(self, *_args, **_kwargs):
        return False


class WorkerTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request):
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != SCHEME.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Worker token header: 'Authorization: Worker <key>'.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid worker token.") from None
        token = WorkerToken.objects.filter(key_hash=hash_worker_key(key)).first()
        if token is None or not token.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked worker token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS:
            WorkerToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return WorkerNode(token), token

    def authenticate_header(self, request):
        return SCHEME


def worker_token_of(request):
    return request.auth if isinstance(request.auth, WorkerToken) else None


class IsWorkerNode(BasePermission):
    message = "A worker token is required (Authorization: Worker <key>)."

    def has_permission(self, request, view):
        return worker_token_of(request) is not None


class IsResearcherOrWorkerNode(BasePermission):
    message = "Researcher rights or a worker token are required."

    def has_permission(self, request, view):
        return is_researcher(request.user) or worker_token_of(request) is not None


class WorkerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "modeling.api.worker_auth.WorkerTokenAuthentication"
    name = "workerToken"

    def get_security_definition(self, auto_schema):
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A GPU node's worker token: `Worker <key>` (manage.py create_worker_token).",
        }
