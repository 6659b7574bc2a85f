"""The artifacts endpoints and dashboard sections: researchers only, and what they show."""

import pytest
from django.urls import reverse
from rest_framework.authtoken.models import Token

from artifacts.models import PairTags
from artifacts.services import store_tags, tag_columns
from modeling.models import Snapshot, TrainingRun
from modeling.training.data import example_from_row
from modeling.training.evaluate import summarize
from tests import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def corpus(make_worker):
    ds = factories.dataset("d")
    writer = make_worker()
    pairs = []
    for i in range(5):
        premise = factories.premise(ds, factories.genre("fiction"))
        pair = factories.pair(ds, premise, ["contradiction"] * 5, hypothesis=f"Nobody is here {i}.", author=writer)
        store_tags([PairTags(pair=pair, tagger="test", **tag_columns({"negation"}))])  # counted in the tag tally
        pairs.append(pair)
    examples = [example_from_row({"pairID": p.pair_id, "gold_label": p.gold_label}) for p in pairs]
    results = summarize({"test": (examples, [2, 2, 2, 2, 0])})
    results["majority_baseline"] = {"label": "neutral", "accuracy": {"test": 0.0}}
    run = TrainingRun.objects.create(
        snapshot=Snapshot.objects.create(datasets=["d"]), model="hypothesis_only", status="done", results=results
    )
    return {"dataset": ds, "writer": writer, "run": run}


def endpoints(run):
    return [
        reverse("artifacts-tags") + "?dataset=d",
        reverse("artifacts-run-tags", args=[run.pk]),
        reverse("artifacts-giveaway-words") + "?dataset=d",
        reverse("dashboard:artifacts"),
        reverse("dashboard:corpus"),
        reverse("dashboard:training_detail", args=[run.pk]),
    ]


def test_every_new_page_and_endpoint_is_for_researchers_only(client, corpus, make_worker):
    run = corpus["run"]
    for url in endpoints(run):
        response = client.get(url)
        if url.startswith("/dashboard/"):
            assert response.status_code == 302 and "/accounts/login/" in response["Location"], url
        else:
            assert response.status_code == 401, url
    worker = make_worker(username="w1")
    client.force_login(worker.user)
    for url in endpoints(run):
        assert client.get(url).status_code == 403, url
    token = Token.objects.create(user=worker.user)
    assert client.get(reverse("artifacts-tags"), HTTP_AUTHORIZATION=f"Token {token.key}").status_code == 403


def test_researcher_api_figures(client, researcher, corpus):
    client.force_login(researcher)
    tags = client.get(reverse("artifacts-tags"), {"dataset": "d"}).json()
    negation = next(row for row in tags["tags"] if row["tag"] == "negation")
    assert negation["share"] == 1.0 and negation["most_frequent_gold"] == "contradiction"
    run_tags = client.get(reverse("artifacts-run-tags", args=[corpus["run"].pk])).json()
    assert next(r for r in run_tags["tags"] if r["tag"] == "negation")["accuracy"] == 0.8
    words = client.get(
        reverse("artifacts-giveaway-words"), {"dataset": "d", "worker": corpus["writer"].pk, "min_count": 5, "top": 3}
    ).json()
    assert {w["word"] for w in words["words"]["contradiction"]} == {"nobody", "is", "here"}
    assert all(w["p"] == 1.0 and w["count"] == 5 for w in words["words"]["contradiction"])
    bad = client.get(reverse("artifacts-giveaway-words"), {"dataset": "nope", "min_count": 0})
    assert bad.status_code == 400 and set(bad.json()) == {"dataset", "min_count"}
    empty = TrainingRun.objects.create(snapshot=corpus["run"].snapshot, model="cbow", results={})
    assert client.get(reverse("artifacts-run-tags", args=[empty.pk])).status_code == 404
    schema = client.get(reverse("api-schema"), {"format": "json"}).json()
    assert {
        "/api/artifacts/tags/",
        "/api/artifacts/giveaway-words/",
        "/api/artifacts/training-runs/{run_id}/tags/",
    } <= set(schema["paths"])


def test_dashboard_sections(client, researcher, corpus):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:corpus"), {"dataset": "d"}).content.decode()
    assert 'id="table-phenomena"' in page and 'data-tag="negation"' in page
    page = client.get(reverse("dashboard:training_detail", args=[corpus["run"].pk])).content.decode()
    assert 'id="table-run-phenomena"' in page and 'id="table-majority-baseline"' in page
    page = client.get(reverse("dashboard:artifacts"), {"dataset": "d", "min_count": 5}).content.decode()
    assert 'data-word="nobody"' in page
    page = client.get(reverse("dashboard:artifacts"), {"min_count": "0"}).content.decode()
    assert 'id="giveaway-errors"' in page
