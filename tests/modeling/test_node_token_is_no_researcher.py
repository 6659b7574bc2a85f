"""A GPU node's node token is no researcher (base/permissions.py): the rule itself
refuses its principal, and so does every researcher endpoint, even one that accepts node tokens."""

import pytest
from rest_framework.test import APIClient, APIRequestFactory
from rest_framework.views import APIView

from base.permissions import (
    EXCLUDE_WORKERS,
    LAUNCH_TRAINING,
    PAY_BONUSES,
    IsResearcher,
    is_researcher,
    may,
    researcher_with,
)
from modeling.api.node_auth import GpuNode, NodeTokenAuthentication
from modeling.models import NodeToken
from tests.present import present

pytestmark = pytest.mark.django_db


def test_the_rule_refuses_a_node_tokens_principal():
    token, key = NodeToken.issue("node-a")
    request = APIRequestFactory().get("/api/snapshots/", HTTP_AUTHORIZATION=f"Worker {key}")
    node, auth = present(NodeTokenAuthentication().authenticate(request))
    assert isinstance(node, GpuNode) and auth == token
    assert not is_researcher(node)
    assert not any(may(node, permission) for permission in (EXCLUDE_WORKERS, PAY_BONUSES, LAUNCH_TRAINING))
    # djangorestframework-stubs type a request's user as a Django user; DRF takes whatever principal
    # an authentication class returns, as this node is.
    request.user, request.auth = node, auth  # type: ignore[assignment]
    assert not IsResearcher().has_permission(request, APIView())
    assert not researcher_with(LAUNCH_TRAINING)().has_permission(request, APIView())


def test_researcher_endpoints_refuse_a_node_token():
    _, key = NodeToken.issue("node-b")
    node = APIClient()
    node.credentials(HTTP_AUTHORIZATION=f"Worker {key}")
    for method, url in [
        ("get", "/api/pairs/"),
        ("get", "/api/snapshots/"),
        ("post", "/api/snapshots/"),
        ("get", "/api/training-runs/"),
        ("post", "/api/training-runs/"),
        ("get", "/api/stats/"),
        ("get", "/api/artifacts/tags/"),
    ]:
        response = getattr(node, method)(url, {}, format="json") if method == "post" else node.get(url)
        assert response.status_code in (401, 403), (method, url, response.status_code)
