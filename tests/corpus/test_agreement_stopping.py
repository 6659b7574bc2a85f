"""Statistics stay honest under stopping rules: the papers' figures read five-label
pairs only, and pairs stopped early are counted apart."""

import pytest

from corpus.agreement import agreement_stats, stopped_early_stats
from corpus.models import Label, Split, StoppingPolicy, StoppingRule
from corpus.scope import Scope
from tests import factories

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
pytestmark = pytest.mark.django_db


def build(dataset, sequences):
    for labels in sequences:
        factories.pair(dataset, factories.premise(dataset, split=Split.DEV), labels)


FIVE_LABEL = [[E, E, N, E, C], [N, N, N, N, N], [C, E, N, C, E]]


@pytest.mark.parametrize("source", ["tallies", "pairs"])
def test_stopped_pairs_leave_the_figures_as_the_five_label_pairs_give_them(source):
    fixed = factories.dataset("fixed-rule")
    build(fixed, FIVE_LABEL)
    decided = factories.dataset("decided-rule")
    StoppingPolicy.objects.create(dataset=decided, split=Split.DEV, rule=StoppingRule.DECIDED)
    build(decided, [*FIVE_LABEL, [E, E, E], [C, N, C, C]])
    alone, mixed = (
        agreement_stats(Scope.named("fixed-rule"), source=source),
        agreement_stats(Scope.named("decided-rule"), source=source),
    )
    assert mixed["five_label_pairs"] == alone["five_label_pairs"] == 3
    assert stopped_early_stats(Scope.named("decided-rule")) == {"stopped_early_pairs": 2, "labels_saved": 3}
    assert stopped_early_stats(Scope.named("fixed-rule", Split.DEV)) == {"stopped_early_pairs": 0, "labels_saved": 0}
    for key in ("unanimous", "individual_eq_gold", "individual_eq_author", "gold_eq_author", "no_gold"):
        assert mixed[key] == alone[key], key
    assert mixed["fleiss_kappa"] == alone["fleiss_kappa"]
    assert mixed["pairs"] == 5 and mixed["gold_counts"][E] == alone["gold_counts"][E] + 1
