"""A two-way dataset stores "not-entailed" as neutral: summed into "All datasets" it counted as neutral in
gold counts and κ, and the workers page showed two-way labels in its three-way columns.
All datasets' label figures are over the three-way datasets and name the ones left out."""

import pytest
from django.urls import reverse

from corpus.agreement import agreement_stats
from corpus.scope import Scope
from tests import factories

pytestmark = pytest.mark.django_db

E, N, C = "entailment", "neutral", "contradiction"


@pytest.fixture
def mixed(make_worker):
    """A three-way dataset (one pair of each gold) and a two-way one of three not-entailed pairs
    (stored neutral), all labelled by the same four validators; a fifth validator labels only two-way pairs."""
    validators = [make_worker() for _ in range(4)]
    two_way_only = make_worker()
    three = factories.dataset("mnli-like")
    for label in (E, N, C):
        factories.pair(three, factories.premise(three), [label] * 5, validators=validators)
    two = factories.dataset("rte-like", label_scheme="two_way")
    for _ in range(3):
        factories.pair(two, factories.premise(two), [N] * 5, validators=[two_way_only])
    return three, two, two_way_only


def test_all_datasets_gold_counts_and_kappa_leave_the_two_way_dataset_out_and_say_so(client, researcher, mixed):
    three, two, _ = mixed
    everything = agreement_stats(Scope.everything())
    alone = agreement_stats(Scope.of_dataset(three))
    assert everything["gold_counts"][N] == 1  # the three not-entailed pairs are not neutral
    assert everything["gold_counts"] == alone["gold_counts"]
    assert everything["fleiss_kappa"] == alone["fleiss_kappa"]
    assert everything["pairs"] == 3 and everything["left_out"] == [two.slug]
    client.force_login(researcher)
    for page in ("validation", "corpus"):
        html = " ".join(client.get(reverse(f"dashboard:{page}")).content.decode().split())
        assert 'id="labels-left-out"' in html and "rte-like labels pairs two ways" in html, page
    corpus = client.get(reverse("dashboard:corpus")).content.decode()
    assert 'data-label="neutral"' in corpus
    neutral_row = corpus.split('data-label="neutral"')[1].split("</tr>")[0]
    assert 'data-stat="gold" data-value="1"' in neutral_row
    # One dataset's page has its own scheme and no note.
    html = client.get(reverse("dashboard:validation") + f"?dataset={two.slug}").content.decode()
    assert 'id="labels-left-out"' not in html


def test_the_workers_page_keeps_two_way_labels_out_of_the_three_way_columns(client, researcher, mixed):
    *_, two_way_only = mixed
    client.force_login(researcher)
    html = client.get(reverse("dashboard:workers")).content.decode().split('id="table-quality"')[1]
    row = html.split(f'data-worker="{two_way_only.pk}"')[1].split("</tr>")[0]
    shares = row.split('data-stat="shares">')[1].split("<")[0].strip()
    assert shares == "—"  # no three-way labels: not "0% / 100% / 0%"
    assert 'data-stat="two-way-shares"' in row and "0% / 100%" in row
