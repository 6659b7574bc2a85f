"""The whole `manage.py load_demo` (every part: artifacts, quality, recast, adversarial, the snapshot
and its runs) on a fresh database: no hand-kept aggregate drifts from what it counts (issue 44.4),
and every pair is tagged, so the snapshot exports every written pair's parse.

Loaded once for this module (tests.conftest.rows_for_the_module)."""

from io import StringIO

import pytest
from django.core.management import call_command

from artifacts import tag_tally
from artifacts.services import pairs_to_tag
from collection import hypothesis_tally
from corpus.models import Pair
from corpus.recompute import recompute_gold
from tests.conftest import rows_for_the_module

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


@pytest.fixture(scope="module")
def whole_demo(django_db_setup, django_db_blocker, tmp_path_factory):
    with rows_for_the_module(django_db_blocker, tmp_path_factory.mktemp("whole-demo")):
        out = StringIO()
        call_command("load_demo", stdout=out)
        yield out.getvalue()


def test_a_fresh_demo_has_no_drift_in_any_maintained_aggregate(whole_demo):
    check = recompute_gold(fix=False, lengths=True)  # what `recompute_gold --check` prints
    assert check.pairs_checked == Pair.objects.count() > 0
    assert check.disagreements == 0
    assert check.tally_drift is not None and (check.tally_drift.keys, check.tally_drift.rows) == (0, 0)
    assert tag_tally.check_and_rebuild(repair=False).keys == 0
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts() != {}


def test_every_demo_pair_is_tagged_and_every_written_pair_parsed(whole_demo):
    assert "Phenomenon tags skipped" not in whole_demo  # the tagger is a requirement (requirements.txt)
    assert not pairs_to_tag().exists()
    written = Pair.objects.filter(author__isnull=False, dataset__slug="collected")
    assert written.exists() and not written.filter(parse="").exists()
