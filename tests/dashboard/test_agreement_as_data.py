"""Agreement as data: the agreement tables (κ, α, per genre, per label, per
annotator pair, each worker against the rest) as CSV beside the validation page and through
/api/validation/agreement/, with the page's own figures."""

import csv
import io

import pytest
from django.urls import reverse

from corpus.agreement import agreement_stats
from corpus.models import Label, Split
from corpus.scope import Scope
from quality.agreement_tables import agreement_tables
from tests import factories

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value


@pytest.fixture
def labelled(make_worker):
    dataset = factories.dataset("agree")
    ann, bob, cy, dee = (make_worker(external_id=name) for name in ("ANN", "BOB", "CY", "DEE"))
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    for genre, labels in ((fiction, [E, E, E, E, N]), (travel, [N, N, C, N, N]), (fiction, [C, C, C, E, C])):
        factories.pair(
            dataset, factories.premise(dataset, genre, split=Split.DEV), labels, validators=(ann, bob, cy, dee)
        )
    return dataset


def test_the_tables_hold_the_pages_figures(labelled):
    tables = agreement_tables(Scope.of_dataset(labelled))
    stats = agreement_stats(Scope.of_dataset(labelled))
    overall = {row["figure"]: row["value"] for row in tables["overall"]}
    assert overall["fleiss_kappa"] == stats["fleiss_kappa"]["overall"]
    assert overall["krippendorff_alpha_nominal"] == stats["krippendorff_alpha"]["nominal"]["alpha"]
    assert {row["genre"] for row in tables["per_genre"]} == {"fiction", "travel"}
    assert {row["label"] for row in tables["per_label"]} == {E, N, C}
    pairs = {(row["worker_a"], row["worker_b"]): row for row in tables["annotator_pairs"]}
    # Validators' labels per pair: ANN E N C, BOB E C C, CY E N E, DEE N N C (the authors are anonymous).
    assert pairs[("ANN", "BOB")]["shared_pairs"] == 3
    assert pairs[("ANN", "BOB")]["agreement"] == pytest.approx(2 / 3)
    assert pairs[("BOB", "CY")]["agreement"] == pytest.approx(1 / 3)
    rest = {row["worker"]: row for row in tables["worker_vs_rest"]}
    assert rest["ANN"]["agreement_with_rest"] == 1.0 and rest["DEE"]["agreement_with_rest"] == pytest.approx(2 / 3)


def test_each_table_downloads_as_csv_from_the_validation_page(client, researcher, labelled):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:validation"), {"dataset": "agree"}).content.decode()
    assert 'data-table="annotator_pairs"' in page
    response = client.get(reverse("dashboard:agreement_csv", args=["worker_vs_rest"]), {"dataset": "agree"})
    assert response["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(response.content.decode())))
    assert {row["worker"] for row in rows} == {"ANN", "BOB", "CY", "DEE"}
    assert client.get(reverse("dashboard:agreement_csv", args=["nonsense"])).status_code == 404


def test_the_rest_api_gives_the_tables_to_researchers_only(client, researcher, labelled, make_worker):
    url = "/api/validation/agreement/"
    worker = make_worker()
    client.force_login(worker.user)
    assert client.get(url).status_code in (401, 403)
    client.force_login(researcher)
    body = client.get(url, {"dataset": "agree", "table": "per_genre"}).json()
    assert [row["genre"] for row in body["tables"]["per_genre"]] == ["fiction", "travel"]
    assert client.get(url, {"dataset": "nope"}).status_code == 404
    assert client.get(url, {"table": "nope"}).status_code == 400
    assert client.get(url, {"colour": "red"}).status_code == 400
