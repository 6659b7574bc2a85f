"""The OpenAPI schema, the Swagger UI (served locally, no CDN) and a short schemathesis run."""

import re

import pytest
import schemathesis
import schemathesis.checks as schemathesis_checks
from django.contrib.staticfiles import finders
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient
from rest_framework.throttling import SimpleRateThrottle
from schemathesis.core.result import Err
from schemathesis.generation import GenerationMode

from modeling.snapshots.services import create_snapshot, export_snapshot


@pytest.fixture
def token(researcher):
    return Token.objects.create(user=researcher).key


def test_schema_lists_the_api(researcher, token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    response = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    paths = set(schema["paths"])
    assert {
        "/api/snapshots/",
        "/api/snapshots/{id}/",
        "/api/snapshots/{id}/files/{name}",
        "/api/pairs/",
        "/api/stats/",
    } <= paths
    pair_params = {p["name"] for p in schema["paths"]["/api/pairs/"]["get"]["parameters"]}
    assert {"dataset", "genre", "split", "gold_label", "validated", "min_labels", "cursor", "page_size"} <= pair_params
    assert "202" in schema["paths"]["/api/snapshots/"]["post"]["responses"]
    assert {"tokenAuth", "cookieAuth"} <= set(schema["components"]["securitySchemes"])


def test_swagger_ui_uses_only_local_static_files(researcher):
    client = APIClient()
    client.force_login(researcher)
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    references = re.findall(r'(?:src|href)="([^"]+)"', html) + re.findall(r'"(/[^"]*swagger-ui[^"]*)"', html)
    assert references, html
    for reference in references:
        # Nothing fetched from another host: no CDN.
        assert not reference.startswith(("http:", "https:", "//")), reference
    assert not re.search(r"https?://(?!testserver)", html), "an absolute URL to another host"
    assets = [r for r in references if "drf_spectacular_sidecar" in r]
    assert any(r.endswith("swagger-ui-bundle.js") for r in assets)
    for asset in assets:
        relative = asset.split("/static/", 1)[1]
        assert finders.find(relative), f"{relative} is not among the static files"
    # No inline script (the content security policy allows none): Swagger's set-up is a file.
    assert not re.search(r"<script>", html)
    script = client.get("/api/docs/", {"script": ""})
    assert script.status_code == 200 and "/api/schema/" in script.content.decode()
    assert "script-src 'self'" in response["Content-Security-Policy"]


# Every check of `schemathesis run --checks all` that judges one request and its response.
ALL_CHECKS = [
    getattr(schemathesis_checks, name)
    for name in (
        "not_a_server_error",
        "status_code_conformance",
        "content_type_conformance",
        "response_headers_conformance",
        "response_schema_conformance",
        "negative_data_rejection",
        "positive_data_acceptance",
        "missing_required_header",
        "unsupported_method",
        "allow_header_conformance",
        "use_after_free",
        "ensure_resource_availability",
        "ignored_auth",
    )
]


def test_schemathesis_with_all_checks_finds_nothing(small_corpus, token, monkeypatch, settings):
    """A bounded run of `--checks all` over every operation, schema-valid and schema-violating
    requests both: no server error, every answer documented and conformant, valid requests
    accepted (2xx/404/409), invalid ones refused. Launches and exports made here are never queued:
    the test's transaction never commits, and they are sent on commit."""
    export_snapshot(create_snapshot(None))  # so that snapshot ids and file names can be real
    # About a thousand requests in a few seconds, one token's and anonymous ones: the rates would
    # answer 429 to the last operations, whose answers this test is about (tests/crowd/
    # test_links_and_logins.py tests the throttle itself).
    monkeypatch.setattr(SimpleRateThrottle, "THROTTLE_RATES", {"user": "100000/minute", "anon": "100000/minute"})
    # The `ignored_auth` check and negative cases send bad tokens from one address; past the limit
    # every token request would get 429 (tests/crowd/test_links_and_logins.py tests that limit).
    settings.API_FAILED_TOKENS = {**settings.API_FAILED_TOKENS, "PER_ADDRESS": 100000}
    headers = {"Authorization": f"Token {token}"}
    # As Django's test client does: the test's transaction must survive the start and end of each WSGI request.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        checked, failures = run_schemathesis(headers)
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)
    assert not failures, "\n\n".join(failures[:5])
    assert len(checked) >= 200
    statuses = {status for _, _, status in checked}
    assert {200, 202, 400, 401, 404} <= statuses, statuses
    operations = {(method, path) for method, path, _ in checked}
    assert ("POST", "/api/training-runs/") in operations and ("POST", "/api/snapshots/") in operations


def run_schemathesis(headers, max_examples=8):
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", get_wsgi_application(), headers=headers)
    checked: list[tuple[str, str, int]] = []
    failures: list[str] = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            raise result.err()
        operation = result.ok()
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            _check_operation(operation, mode, headers, max_examples, checked, failures)
    return checked, failures


def _check_operation(operation, mode, headers, max_examples, checked, failures):
    """Calls one operation with cases generated in one mode; appends what it saw to checked and failures."""

    @settings(
        max_examples=max_examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def call(case):
        try:
            response = case.call_and_validate(headers=headers, checks=ALL_CHECKS)
        except Exception as failure:
            failures.append(
                f"{case.method} {case.formatted_path} {case.query} {str(case.body)[:200]}: {str(failure)[:800]}"
            )
            return
        checked.append((case.method.upper(), operation.path, response.status_code))

    call()


def test_schema_documents_the_real_responses(researcher, token):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token}")
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            responses = operation["responses"]
            assert {"400", "401", "403", "429"} <= set(responses), (method, path)
            assert "404" in responses, (method, path)  # an unknown path id, or an unknown object named
            for parameter in operation.get("parameters", []):
                if parameter["name"] == "page_size":
                    assert (parameter["schema"]["minimum"], parameter["schema"]["maximum"]) == (1, 1000)
                assert "" not in parameter.get("schema", {}).get("enum", [None]), (path, parameter["name"])
    download = schema["paths"]["/api/snapshots/{id}/files/{name}"]["get"]["responses"]
    assert {"application/x-ndjson", "text/tab-separated-values"} <= set(download["200"]["content"])
    assert "409" in download


def test_every_free_text_key_of_the_training_config_schema_is_free_text_to_the_service():
    """The schema says what a launch may send; a key it documents as any text must not be one the
    service refuses for its value (a key with a fixed set of values needs its enum, or schema-valid
    launches are refused)."""
    from modeling.api.schema import NO_NUL, training_config_schema
    from modeling.training.config import resolve_config

    free = [
        key
        for key, prop in training_config_schema()["properties"].items()
        if prop.get("type") == "string" and "enum" not in prop and prop.get("pattern", NO_NUL) == NO_NUL
    ]
    assert "train_genre" in free
    for key in free:
        resolve_config("bilstm", {key: "some-text"})  # raises ConfigError for a closed set
