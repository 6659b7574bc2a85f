"""The GPU nodes' credential: `Authorization: Worker <key>` (modeling.models.NodeToken).

A node token authenticates as a `GpuNode`, which is no user: every researcher endpoint refuses
it, and only the node API and the snapshot file download accept it (`IsGpuNode`); a researcher's
token cannot act as a node either. The scheme word `Worker` stays, so issued tokens keep working.
"""

from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.views import APIView

from base.permissions import is_researcher
from modeling.models import NodeToken, hash_node_key

SCHEME = "Worker"
# How often a token's last_used_at is written (one UPDATE per heartbeat would be wasteful).
LAST_USED_RESOLUTION_SECONDS = 60


class GpuNode:
    """The principal of a request made with a node token."""

    is_authenticated = True
    is_active = True
    is_staff = False
    is_superuser = False
    is_anonymous = False
    pk = None
    id = None

    def __init__(self, token: NodeToken) -> None:
        self.token = token
        self.username = f"node-token:{token.name}"

    def __str__(self) -> str:
        return self.username

    def has_perm(self, *_args: object, **_kwargs: object) -> bool:
        return False


class NodeTokenAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[GpuNode, NodeToken] | None:
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != SCHEME.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Node token header: 'Authorization: Worker <key>'.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid node token.") from None
        token = NodeToken.objects.filter(key_hash=hash_node_key(key)).first()
        if token is None or not token.is_active:
            raise exceptions.AuthenticationFailed("Invalid or revoked node token.")
        now = timezone.now()
        if token.last_used_at is None or (now - token.last_used_at).total_seconds() > LAST_USED_RESOLUTION_SECONDS:
            NodeToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return GpuNode(token), token

    def authenticate_header(self, request: Request) -> str:
        return SCHEME


def node_token_of(request: Request) -> NodeToken | None:
    return request.auth if isinstance(request.auth, NodeToken) else None


class IsGpuNode(BasePermission):
    message = "A node token is required (Authorization: Worker <key>)."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return node_token_of(request) is not None


class IsResearcherOrGpuNode(BasePermission):
    message = "Researcher rights or a node token are required."

    def has_permission(self, request: Request, view: APIView) -> bool:
        return is_researcher(request.user) or node_token_of(request) is not None


# drf-spectacular has no type hints: its __init_subclass__ (which registers the extension) is untyped.
class NodeTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    target_class = "modeling.api.node_auth.NodeTokenAuthentication"
    name = "workerToken"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A GPU node's node token: `Worker <key>` (manage.py create_node_token).",
        }
