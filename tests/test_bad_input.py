"""No 500 on bad input: NUL bytes, JSON nested too deeply, NaN/Infinity, an unknown admin filter
value. Each case: the status code, the message, and nothing saved."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from corpus.models import Pair, Premise, Worker
from crowd.models import StudySession
from modeling.models import Snapshot, TrainingRun
from tests.collection.writing_helpers import add_premises, make_study, writing_setup


def counts():
    return {
        model.__name__: model.objects.count() for model in (Pair, Premise, Worker, StudySession, Snapshot, TrainingRun)
    }


def as_json(data):
    return {"data": data, "content_type": "application/json"}


CASES = [
    # (id, method, url, request kwargs, message)
    ("nul-in-path", "get", "/api/snapshots/1/files/train%00.jsonl", {}, "NUL character"),
    ("nul-in-study-link", "get", "/study/study-one/?PROLIFIC_PID=a%00b&STUDY_ID=s&SESSION_ID=x", {}, "NUL character"),
    ("nul-in-query", "get", "/api/pairs/?genre=fic%00tion", {}, "NUL character"),
    ("nul-in-admin-search", "get", "/admin/corpus/pair/?q=a%00b", {}, "NUL character"),
    (
        "nul-in-form-field",
        "post",
        "/accounts/login/",
        {"data": {"username": "a\x00b", "password": "x"}},
        "The form field 'username' contains a NUL character",
    ),
    (
        "nul-in-json-string",
        "post",
        "/api/snapshots/",
        as_json(json.dumps({"datasets": ["a\x00"]})),
        "contains a NUL character",
    ),
    ("raw-nul-in-json", "post", "/api/snapshots/", as_json(b'{"datasets": ["a\x00"]}'), "contains a NUL character"),
    ("json-too-deep", "post", "/api/snapshots/", as_json("[" * 5000 + "]" * 5000), "nested deeper than 64"),
    (
        "json-too-deep-in-strings-is-fine-but-nan-is-not",
        "post",
        "/api/training-runs/",
        as_json('{"snapshot": 1, "model": "cbow", "config": {"train_genre": "[[[[", "lr": NaN}}'),
        "contains NaN",
    ),
    (
        "infinity-in-config",
        "post",
        "/api/training-runs/",
        as_json('{"snapshot": 1, "model": "cbow", "config": {"lr": Infinity}}'),
        "contains Infinity",
    ),
    (
        "negative-infinity-in-config",
        "post",
        "/api/training-runs/",
        as_json('{"snapshot": 1, "model": "cbow", "config": {"epochs": -Infinity}}'),
        "contains -Infinity",
    ),
    (
        "unknown-admin-filter-value",
        "get",
        "/admin/corpus/pair/?label_count=abc",
        {},
        "The labels so far filter takes one of 0, 1, 2, 3, 4, 5, not 'abc'",
    ),
    (
        "nul-in-multipart-field",
        "post",
        "/admin/corpus/pair/",
        {"data": {"f": SimpleUploadedFile("a.txt", b"x"), "note": "a\x00b"}},
        "The form field 'note' contains a NUL",
    ),
]


@pytest.mark.parametrize("case_id, method, url, kwargs, message", CASES, ids=[case[0] for case in CASES])
def test_bad_input_is_a_400_with_a_message_and_saves_nothing(client, researcher, case_id, method, url, kwargs, message):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 2)
    make_study(dataset)
    client.force_login(researcher)
    client.raise_request_exception = False
    before = counts()
    response = getattr(client, method)(url, **kwargs)
    assert response.status_code == 400, response.content[:300]
    body = response.content.decode()
    if url.startswith("/api/"):
        assert message in response.json()["detail"]
    else:
        assert message in body.replace("&#x27;", "'") and "This request could not be understood" in body
    assert counts() == before


def test_nested_json_within_the_limit_reaches_the_view(client, researcher):
    client.force_login(researcher)
    response = client.post(
        "/api/training-runs/",
        **as_json(json.dumps({"snapshot": 999, "model": "cbow", "config": {"train_genre": "[" * 100}})),
    )
    # The view read it and answered about the snapshot: there is none with that id (404).
    assert response.status_code == 404 and "Snapshot 999 does not exist" in response.json()["detail"]
    assert "nested" not in response.content.decode() and "NUL" not in response.content.decode()


def test_api_config_with_out_of_bounds_values_is_refused(client, researcher):
    client.force_login(researcher)
    response = client.post(
        "/api/training-runs/",
        **as_json(json.dumps({"snapshot": 999, "model": "cbow", "config": {"embeddings": "/etc/passwd"}})),
    )
    assert response.status_code == 400 and TrainingRun.objects.count() == 0


def test_a_nul_in_an_uploaded_file_name_is_no_server_error(client, researcher):
    client.force_login(researcher)
    client.raise_request_exception = False
    response = client.post("/admin/corpus/pair/", {"f": SimpleUploadedFile("a\x00b.txt", b"x")})
    assert response.status_code < 500
