"""quality/selectors.py's median seconds of a scope that holds no dataset: a researcher in no team
yet reads no medians, not an error."""

import pytest

from corpus.models import Label
from corpus.scope import Scope
from quality.selectors import median_seconds
from tests import factories

pytestmark = pytest.mark.django_db


def test_the_median_seconds_of_a_scope_of_no_team_are_none():
    """Fails if the medians of a scope that can match no label run its empty statement (a page of a
    researcher in no team would raise instead of showing no medians)."""
    dataset = factories.dataset("timed")
    factories.pair(dataset, factories.premise(dataset), [Label.ENTAILMENT, Label.NEUTRAL])
    assert median_seconds(Scope.of_teams([])) == {}
