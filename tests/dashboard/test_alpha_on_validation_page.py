"""Krippendorff's α on the validation page: beside κ with the pairs each covers, and
first, with the reason, where a stopping rule lets uncontested pairs stop before five labels."""

import pytest
from django.urls import reverse

from corpus.agreement import agreement_stats
from corpus.models import Label, Split, StoppingPolicy, StoppingRule
from corpus.scope import Scope
from tests import factories as core

from .pagefigures import figures, number

pytestmark = pytest.mark.django_db
E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def build(slug, sequences):
    dataset = core.dataset(slug)
    for labels in sequences:
        core.pair(dataset, core.premise(dataset, split=Split.DEV), labels)
    return dataset


FIVE = [[E, E, N, E, C], [N, N, N, N, N], [C, E, N, C, E]]


def page(client, researcher, dataset):
    client.force_login(researcher)
    response = client.get(reverse("dashboard:validation"), {"dataset": dataset.slug})
    assert response.status_code == 200
    return response.content.decode()


def test_alpha_is_shown_after_kappa_with_the_pairs_each_covers(client, researcher):
    dataset = build("fixed-alpha", [*FIVE, [E, E], [C]])
    html = page(client, researcher, dataset)
    alpha = agreement_stats(Scope.of_dataset(dataset))["krippendorff_alpha"]["nominal"]
    value, text = figures(html).by_id["stat-alpha-nominal"]
    assert number(value) == pytest.approx(alpha["alpha"], rel=1e-15) and text == f"{alpha['alpha']:.3f}"
    assert number(figures(html).by_id["stat-alpha-nominal-pairs"][0]) == 4  # [C] has one label
    assert "cover the 3 pairs with all five labels (60.0% of the 5 pairs in scope)" in html
    assert "covers the 4 pairs with at least two labels, however many each has (80.0% of the 5 pairs" in html
    assert 'id="alpha-leads"' not in html
    assert html.index('id="table-kappa"') < html.index('id="table-alpha"')


def test_under_the_decided_rule_the_page_leads_with_alpha_and_says_why(client, researcher):
    dataset = build("decided-alpha", [*FIVE, [E, E, E], [C, N, C, C]])
    StoppingPolicy.objects.create(dataset=dataset, split=Split.DEV, rule=StoppingRule.DECIDED)
    html = page(client, researcher, dataset)
    assert html.index('id="table-alpha"') < html.index('id="table-agreement"') < html.index('id="table-kappa"')
    assert "decided" in html and "read α as this corpus's agreement" in html
    assert number(figures(html).by_id["stat-alpha-nominal-pairs"][0]) == 5
