"""/api/validation/premise-labels/: MPE's per-premise labels (§5.2) for researchers, read-only,
paginated, filtered by dataset and split, in the style of /api/pairs/."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from corpus.models import Label, Split
from tests.present import present
from validation import premise_labels
from validation.models import PremisePair

from .premise_helpers import CAPTIONS, make_items

pytestmark = pytest.mark.django_db
URL = "/api/validation/premise-labels/"


@pytest.fixture
def api(researcher):
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher).key}")
    return client


def test_judgments_and_consensus_are_listed_without_workers(api, make_worker):
    make_items(1, golds=[Label.ENTAILMENT])
    first = PremisePair.objects.get(index=0)
    for label in (Label.ENTAILMENT, Label.ENTAILMENT, Label.NEUTRAL):
        premise_labels.add_premise_labels(make_worker(), {first.pk: label.value})

    response = api.get(URL)

    assert response.status_code == 200
    rows = response.json()["results"]
    assert [row["premise_index"] for row in rows] == [0, 1, 2, 3]
    row = rows[0]
    assert row["judgments"] == ["entailment", "entailment", "neutral"]
    assert (row["consensus"], row["label_count"], row["entailment_votes"]) == ("entailment", 3, 2)
    assert row["premise"] == "A man rides a bike in scene 0." and row["premise_source"] == "0.jpg#0"
    assert row["hypothesis"] == "A person moves in scene 0."
    assert (row["itemID"], row["dataset"], row["split"], row["mpe_gold_label"]) == (
        "mpe-spe-0",
        "mpe-spe",
        Split.DEV,
        Label.ENTAILMENT,
    )
    assert rows[1]["judgments"] == [] and rows[1]["consensus"] == "-"
    assert not any("worker" in key for key in row)


def test_filtered_by_dataset_and_split_and_paginated(api):
    make_items(2, slug="mpe-dev", split=Split.DEV)
    make_items(1, slug="mpe-test", split=Split.TEST, start=10)

    assert len(api.get(URL, {"dataset": "mpe-test"}).json()["results"]) == len(CAPTIONS)
    assert len(api.get(URL, {"split": Split.DEV}).json()["results"]) == 2 * len(CAPTIONS)
    assert api.get(URL, {"dataset": "mpe-dev", "split": Split.TEST}).json()["results"] == []
    assert len(api.get(URL, {"complete": "false"}).json()["results"]) == 3 * len(CAPTIONS)

    page, seen = api.get(URL, {"page_size": 5}).json(), []
    while True:
        assert len(page["results"]) <= 5
        seen += [row["id"] for row in page["results"]]
        if not page["next"]:
            break
        page = api.get(page["next"]).json()
    assert seen == sorted(PremisePair.objects.values_list("pk", flat=True))  # every pair once, by id


def test_bad_queries_are_refused_by_name(api):
    make_items(1)
    assert api.get(URL, {"dataset": "no-such"}).status_code == 404
    assert api.get(URL, {"datset": "mpe-spe"}).status_code == 400
    assert api.get(URL, {"split": ""}).status_code == 400
    assert api.get(URL, {"page_size": 0}).status_code == 400


def test_researchers_only(make_worker):
    make_items(1)
    assert APIClient().get(URL).status_code in (401, 403)
    worker = APIClient()
    worker.force_login(make_worker().user)
    assert worker.get(URL).status_code == 403
    detail = present(PremisePair.objects.first())
    assert worker.get(f"{URL}{detail.pk}/").status_code == 403


def test_in_the_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    parameters = {p["name"] for p in schema["paths"][URL]["get"]["parameters"]}
    assert {"dataset", "split", "complete", "cursor", "page_size"} <= parameters
