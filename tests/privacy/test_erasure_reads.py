"""An erasure reads what the person touched, not the corpus: the rows of the label and pair tables
it reads follow the person's labels, however many pairs and labels their dataset holds."""

import pytest
from django.db import connection

from corpus.models import Grammaticality, GrammaticalityJudgment, Label, Worker
from crowd.models import Study, StudySession
from privacy.services import erase_by_market_id
from tests import factories

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
OTHERS_PAIRS = 150  # pairs of the dataset the person never saw, five labels each
PERSONS_PAIRS = 3
TABLES = ("collection_pair", "validation_validationlabel")


def rows_read() -> dict[str, int]:
    """Rows of TABLES read so far in this transaction, by sequential and by index scans."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT relname, coalesce(seq_tup_read, 0) + coalesce(idx_tup_fetch, 0)"
            " FROM pg_stat_xact_user_tables WHERE relname = ANY(%s)",
            [list(TABLES)],
        )
        return dict(cursor.fetchall())


def test_the_erasure_reads_the_persons_pairs_and_labels_not_every_one_of_the_dataset(make_worker, settings):
    # The dataset stands in for a large one, whose pages' figures are refreshed in the background
    # after a label moves, not recomputed whole inside the erasure as a small corpus's are.
    settings.DASHBOARD_LARGE_PAIRS = 1
    factories.genre("fiction")
    dataset = factories.dataset("large")
    person = make_worker(username="prolific-HEAVY0001")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="HEAVY0001")
    others = [make_worker() for _ in range(5)]
    for n in range(OTHERS_PAIRS + PERSONS_PAIRS):
        validators = [person, *others[:3]] if n % 75 == 0 else others[:4]
        factories.pair(dataset, factories.premise(dataset), [E, E, N, E, C], validators=validators)
    study = Study.objects.create(
        slug="large", name="Large", dataset=dataset, completion_code="L", contributions_on_withdrawal="delete"
    )
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION-LARGE")
    with connection.cursor() as cursor:
        # Statistics of these rows, as autovacuum keeps them: else the planner plans with whatever an
        # earlier test left (an import's thousands of rows, since deleted).
        cursor.execute("ANALYZE collection_pair, validation_validationlabel, collection_premise")
        # On tables this small every plan may read them whole, as cheap as any other; without
        # sequential scans the planner takes an index a statement can use, and a statement that
        # can be answered from the dataset's index (every pair of the dataset) may take it.
        cursor.execute("SET LOCAL enable_seqscan = off")
    before = rows_read()

    assert dataset.team_id is not None
    record = erase_by_market_id("HEAVY0001", team_id=dataset.team_id)

    after = rows_read()
    read = {table: after.get(table, 0) - before.get(table, 0) for table in TABLES}
    assert record.counts["contributions.labels"] == PERSONS_PAIRS
    # A few passes over the person's pairs and their labels: less than half of one read of every
    # pair (153) or every label (765) of the dataset.
    assert read["collection_pair"] < OTHERS_PAIRS // 2, read
    assert read["validation_validationlabel"] < OTHERS_PAIRS * 5 // 2, read


def test_the_persons_grammaticality_judgments_leave_from_the_studys_dataset_only(make_worker):
    factories.genre("fiction")
    studied, elsewhere = factories.dataset("studied"), factories.dataset("elsewhere")
    person = make_worker(username="prolific-JUDGE0001")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="JUDGE0001")
    here = factories.pair(studied, factories.premise(studied), [E])
    there = factories.pair(elsewhere, factories.premise(elsewhere), [E])
    for pair in (here, there):
        GrammaticalityJudgment.objects.create(pair=pair, worker=person, judgment=Grammaticality.NONE)
    study = Study.objects.create(
        slug="studied", name="Studied", dataset=studied, completion_code="S", contributions_on_withdrawal="delete"
    )
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION-JUDGE")

    assert studied.team_id is not None
    record = erase_by_market_id("JUDGE0001", team_id=studied.team_id)

    assert record.counts["contributions.judgments"] == 1
    assert list(GrammaticalityJudgment.objects.values_list("pair_id", flat=True)) == [there.pk]
