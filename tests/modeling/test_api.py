"""The REST API: researchers only, strict filters, stable cursors, snapshot exports through Celery."""

import hashlib
import json
import shutil
from pathlib import Path

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from base.long_tasks import JobStatus
from corpus.agreement import agreement_stats
from corpus.models import NO_GOLD, Pair
from corpus.scope import Scope
from modeling.models import Snapshot
from modeling.snapshots.services import create_snapshot, export_snapshot, snapshot_directory
from modeling.snapshots.tasks import export_snapshot_task
from tests.conftest import wait_for
from tests.modeling.conftest import FIVE_E, add_pair
from tests.present import present


@pytest.fixture
def api(researcher):
    client = APIClient()
    token = Token.objects.create(user=researcher)
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    return client


@pytest.fixture
def worker_client(make_worker):
    client = APIClient()
    client.force_login(make_worker().user)
    return client


def endpoints(snapshot_id, pair_id):
    return [
        ("get", "/api/"),
        ("get", "/api/snapshots/"),
        ("post", "/api/snapshots/"),
        ("get", f"/api/snapshots/{snapshot_id}/"),
        ("get", f"/api/snapshots/{snapshot_id}/files/train.jsonl"),
        ("get", f"/api/snapshots/{snapshot_id}/files/manifest.json"),
        ("get", "/api/pairs/"),
        ("get", f"/api/pairs/{pair_id}/"),
        ("get", "/api/stats/"),
        ("get", "/api/schema/"),
        ("get", "/api/docs/"),
    ]


def test_permissions_on_every_endpoint(small_corpus, api, worker_client):
    snapshot = export_snapshot(create_snapshot(None))
    pair_id = present(Pair.objects.first()).pk
    anonymous = APIClient()
    for method, url in endpoints(snapshot.pk, pair_id):
        assert getattr(anonymous, method)(url).status_code == 401, url
        assert getattr(worker_client, method)(url).status_code == 403, url
        # (The POST's export task is queued on commit, which never comes inside this test's transaction.)
        response = getattr(api, method)(url, format="json") if method == "post" else api.get(url)
        assert response.status_code == (202 if method == "post" else 200), (url, response.status_code)
    # A bad token is refused, not treated as anonymous-with-access.
    stranger = APIClient()
    stranger.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
    assert stranger.get("/api/pairs/").status_code == 401


def test_post_starts_export_and_files_download(small_corpus, api, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = api.post(
            "/api/snapshots/", {"datasets": ["mini"], "filters": {"splits": ["train", "dev"]}}, format="json"
        )
    assert response.status_code == 202
    body = response.json()
    assert body["status"] == "pending" and body["datasets"] == ["mini"] and body["files"] == []
    assert response["Location"] == f"/api/snapshots/{body['id']}/"
    # Not done yet: its files are a conflict, not a 404.
    assert api.get(f"/api/snapshots/{body['id']}/files/train.jsonl").status_code == 409
    assert len(callbacks) == 1  # the task is queued once the snapshot row is committed
    export_snapshot_task(body["id"])  # what the Celery worker runs (tested with a real worker below)
    detail = api.get(f"/api/snapshots/{body['id']}/").json()
    assert detail["status"] == "done" and detail["row_count"] == 7 and detail["progress"] == 1.0
    assert {f["name"] for f in detail["files"]} == {
        "train.jsonl",
        "train.tsv",
        "dev_matched.jsonl",
        "dev_matched.tsv",
        "dev_mismatched.jsonl",
        "dev_mismatched.tsv",
    }
    for entry in detail["files"]:
        download = api.get(f"/api/snapshots/{body['id']}/files/{entry['name']}")
        assert download.status_code == 200
        data = b"".join(download.streaming_content)
        assert hashlib.sha256(data).hexdigest() == entry["sha256"] == download["X-Content-SHA256"]
        assert f'filename="{entry["name"]}"' in download["Content-Disposition"]
        assert entry["url"].endswith(f"/api/snapshots/{body['id']}/files/{entry['name']}")
    manifest = json.loads(b"".join(api.get(f"/api/snapshots/{body['id']}/files/manifest.json").streaming_content))
    assert manifest["content_hash"] == detail["content_hash"]
    assert api.get(f"/api/snapshots/{body['id']}/files/test.jsonl").status_code == 404
    assert api.get(f"/api/snapshots/{body['id']}/files/..%2Fmanifest.json").status_code == 404
    assert api.get("/api/snapshots/999999/files/train.jsonl").status_code == 404
    listed = api.get("/api/snapshots/?status=done").json()["results"]
    assert [s["id"] for s in listed] == [body["id"]]


def test_only_the_manifests_files_are_served_not_whatever_lies_in_the_folder(small_corpus, api):
    """A stray file in the snapshot's folder (a half-written export, an operator's note, a file of
    another version) is not part of the snapshot: only the files the snapshot lists, and its manifest."""
    snapshot = export_snapshot(create_snapshot(None, filters={"splits": ["train"]}))
    folder = snapshot_directory(snapshot)
    (folder / "notes.txt").write_text("not for download")
    (folder / "train.jsonl.partial").write_text("{}")
    for name in ("notes.txt", "train.jsonl.partial"):
        response = api.get(f"/api/snapshots/{snapshot.pk}/files/{name}")
        assert response.status_code == 404 and f"has no file '{name}'" in response.json()["detail"], name
    listed = [record.name for record in snapshot.files.all()]
    assert listed and all(api.get(f"/api/snapshots/{snapshot.pk}/files/{n}").status_code == 200 for n in listed)


def test_post_with_bad_request_names_the_fields(small_corpus, api):
    response = api.post(
        "/api/snapshots/", {"datasets": ["mini", "nope"], "filters": {"colour": "red", "min_labels": 9}}, format="json"
    )
    assert response.status_code == 400
    assert set(response.json()) == {"datasets", "filters.colour", "filters.min_labels"}
    assert "nope" in response.json()["datasets"][0]
    assert api.post("/api/snapshots/", {"datasets": "mini"}, format="json").status_code == 400
    assert not Snapshot.objects.exists()


@pytest.mark.parametrize(
    "query, expected",
    [
        ("", lambda p: p),
        ("dataset=mini", lambda p: p.filter(dataset__slug="mini")),
        ("genre=letters", lambda p: p.filter(premise__genre__slug="letters")),
        ("split=dev", lambda p: p.filter(premise__split="dev")),
        ("gold_label=-", lambda p: p.filter(gold_label=NO_GOLD)),
        (
            "gold_label=entailment&dataset=captions-only",
            lambda p: p.filter(gold_label="entailment", dataset__slug="captions-only"),
        ),
        ("validated=true", lambda p: p.filter(label_count__gte=5)),
        ("validated=false", lambda p: p.filter(label_count__lt=5)),
        ("min_labels=4", lambda p: p.filter(label_count__gte=4)),
    ],
)
def test_pair_filters(small_corpus, api, query, expected):
    response = api.get(f"/api/pairs/?page_size=1000&{query}")
    assert response.status_code == 200, response.json()
    ids = [row["id"] for row in response.json()["results"]]
    assert ids == list(expected(Pair.objects.order_by("id")).values_list("id", flat=True))
    assert ids, "each filter selects something in the small corpus"


def test_pair_fields(small_corpus, api):
    pair = Pair.objects.get(pair_id="123.jpg#0r1e")
    row = api.get(f"/api/pairs/{pair.pk}/").json()
    assert row["pairID"] == "123.jpg#0r1e" and row["promptID"] == "123.jpg#0" and row["genre"] == "captions"
    assert row["annotator_labels"] == FIVE_E and row["gold_label"] == "entailment" and row["split"] == "dev"
    assert not any("worker" in key or key == "author" for key in row)


@pytest.mark.parametrize(
    "query, name",
    [
        ("genres=fiction", "genres"),
        ("dataset=mini&colour=red", "colour"),
        ("split=validation", "split"),
        ("gold_label=maybe", "gold_label"),
        ("validated=maybe", "validated"),
        ("min_labels=abc", "min_labels"),
        ("min_labels=9", "min_labels"),
        ("dataset=", "dataset"),
        ("genre=&split=dev", "genre"),
        ("page_size=0", "page_size"),
        ("page_size=lots", "page_size"),
    ],
)
def test_unknown_or_bad_query_parameter_is_400(small_corpus, api, query, name):
    response = api.get(f"/api/pairs/?{query}")
    assert response.status_code == 400
    assert name in response.json(), response.json()


@pytest.mark.parametrize(
    "url, name",
    [
        ("/api/pairs/?dataset=nope", "dataset"),
        ("/api/pairs/?genre=nope", "genre"),
        ("/api/stats/?dataset=nope", "dataset"),
        ("/api/training-runs/?snapshot=999", "snapshot"),
    ],
)
def test_a_well_formed_query_naming_an_unknown_object_is_404_naming_it(small_corpus, api, url, name):
    """Not 400: the request is well formed, the object is missing (what the schema documents)."""
    response = api.get(url)
    assert response.status_code == 404
    body = response.json()
    assert name in body and url.rsplit("=", 1)[1] in body["detail"], body


def test_unknown_parameters_elsewhere_are_400(small_corpus, api):
    assert api.get("/api/snapshots/?colour=red").status_code == 400
    assert api.get("/api/stats/?datset=mini").json() == {
        "datset": ["Unknown query parameter 'datset'. Allowed: dataset, format, split."]
    }
    assert "split" in api.get("/api/stats/?split=nope").json()


def test_stats_are_agreement_stats(small_corpus, api):
    cases: list[tuple[str, Scope]] = [
        ("", Scope.everything()),
        ("?dataset=mini", Scope.named("mini")),
        ("?dataset=mini&split=dev", Scope.named("mini", "dev")),
    ]
    for query, scope in cases:
        response = api.get(f"/api/stats/{query}")
        assert response.status_code == 200
        assert response.json() == json.loads(json.dumps(agreement_stats(scope)))


def test_cursor_pagination_is_stable_while_pairs_are_added(small_corpus, api):
    before = list(Pair.objects.order_by("id").values_list("id", flat=True))
    page = api.get("/api/pairs/?page_size=4").json()
    seen = [row["id"] for row in page["results"]]
    premise = Pair.objects.get(pk=before[0]).premise
    # New pairs arrive while the client is reading (validators and writers never stop).
    added = [add_pair(small_corpus["mini"], premise, f"New hypothesis {i}.", FIVE_E).pk for i in range(5)]
    while page["next"]:
        page = api.get(page["next"]).json()
        seen.extend(row["id"] for row in page["results"])
        if len(seen) == len(before):
            add_pair(small_corpus["mini"], premise, "Added at the end of the walk.", FIVE_E)
    assert len(seen) == len(set(seen)), "no pair twice"
    assert set(before) <= set(seen), "no pre-existing pair skipped"
    assert seen == sorted(seen)
    assert set(added) <= set(seen)
    # Going back from the last page is consistent too.
    assert page["previous"]
    back = api.get(page["previous"]).json()["results"]
    assert [row["id"] for row in back] == seen[-len(page["results"]) - 4 : -len(page["results"])]


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_post_export_runs_on_the_celery_worker(celery_worker_process, small_corpus, researcher):
    """On PostgreSQL + Redis the real worker runs the export; without a broker it runs in-process."""
    client = APIClient()
    client.force_authenticate(researcher)
    response = client.post("/api/snapshots/", {"datasets": ["captions-only"]}, format="json")
    assert response.status_code == 202 and response.json()["status"] == "pending"
    snapshot_id = response.json()["id"]

    def finished():
        snapshot = Snapshot.objects.get(pk=snapshot_id)
        return snapshot if snapshot.status in (JobStatus.DONE, JobStatus.FAILED) else None

    snapshot = wait_for(finished, timeout=60, message="the snapshot export to finish")
    try:
        assert snapshot.status == JobStatus.DONE, snapshot.error
        assert snapshot.row_count == 3 and len(snapshot.content_hash) == 64
        assert {f.name for f in snapshot.files.all()} == {"dev.jsonl", "dev.tsv", "test.jsonl", "test.tsv"}
        # The worker wrote the files where its settings say (its own DATA_DIR when it is a subprocess).
        assert (Path(snapshot.directory) / "manifest.json").is_file()
    finally:
        if celery_worker_process is not None:
            shutil.rmtree(snapshot.directory, ignore_errors=True)
