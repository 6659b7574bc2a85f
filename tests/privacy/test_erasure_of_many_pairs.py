"""An erasure of a person who labelled a fifth of a dataset of thousands of pairs: each of their
pairs is read by its own index lookups, never by a pass over the label table, and every figure
equals a recompute from scratch afterwards."""

import random

import pytest
from django.db import connection

from corpus import tallies, worker_tally
from corpus.models import Dataset, Label, Pair, Premise, Worker
from corpus.services import create_pairs
from crowd.models import Study, StudySession
from privacy.services import erase_by_market_id
from tests import factories
from tests.privacy.test_erasure import figures, no_drift
from tests.privacy.test_erasure_reads import TABLES, rows_read

pytestmark = pytest.mark.django_db

PAIRS = 3_000  # five labels each
PERSONS_PAIRS = 600  # the person's label in position 2 of the first of them
VALIDATORS = 12  # positions 2-5 of the rest, round robin
LABELS = (Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION)


def test_an_erasure_of_hundreds_of_pairs_looks_each_up_and_leaves_every_figure_as_a_recompute(make_worker):
    rng = random.Random(71)
    dataset = factories.dataset("many")
    genre = factories.genre("fiction")
    premises = Premise.objects.bulk_create(
        Premise(dataset=dataset, genre=genre, split="dev", prompt_id=f"m{n}", text=f"A person number {n} walks.")
        for n in range(PAIRS // 3)
    )
    pairs, labels = [], []
    for n in range(PAIRS):
        gold = rng.choice(LABELS)
        pairs.append(
            Pair(premise=premises[n // 3], pair_id=f"m{n}", hypothesis=f"An animal {n % 89}.", author_label=gold)
        )
        labels.append([gold, *(gold if rng.random() < 0.7 else rng.choice(LABELS) for _ in range(4))])
    create_pairs(dataset, "dev", pairs, labels)
    validators = [make_worker() for _ in range(VALIDATORS)]
    person = make_worker(username="prolific-MANY0001")
    Worker.objects.filter(pk=person.pk).update(market="prolific", external_id="MANY0001")
    with connection.cursor() as cursor:
        # The validators as a crowd leaves them: round robin on positions 2-5, the person on
        # position 2 of the dataset's first pairs (the import wrote the labels without workers).
        cursor.execute(
            "UPDATE validation_validationlabel SET worker_id = %s + ((pair_id * 4 + position) %% %s) WHERE position > 1",
            [validators[0].pk, VALIDATORS],
        )
        cursor.execute(
            "UPDATE validation_validationlabel SET worker_id = %s WHERE position = 2 AND pair_id IN "
            "(SELECT id FROM collection_pair WHERE dataset_id = %s ORDER BY id LIMIT %s)",
            [person.pk, dataset.pk, PERSONS_PAIRS],
        )
    # The figures of what was written around the writers: the workers just given, the premises'
    # lengths (bulk-created).
    tallies.check_and_rebuild(dataset, worker_tally.TALLY, repair=True)
    tallies.check_and_rebuild(dataset, tallies.CORPUS, repair=True)
    study = Study.objects.create(
        slug="many", name="Many", dataset=dataset, completion_code="M", contributions_on_withdrawal="delete"
    )
    StudySession.objects.create(study=study, worker=person, external_session_id="SESSION-MANY")
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE collection_pair, validation_validationlabel, collection_premise")
    before = rows_read()

    assert dataset.team_id is not None
    record = erase_by_market_id("MANY0001", team_id=dataset.team_id)

    after = rows_read()
    read = {table: after.get(table, 0) - before.get(table, 0) for table in TABLES}
    assert record.counts["contributions.labels"] == PERSONS_PAIRS
    # A few lookups of each of the person's pairs and of their labels (the lock, the figures read
    # before and after, the recount, the write): less than two passes over the dataset's labels and
    # three over its pairs, which a join of the person's pairs as a set to the table may take for
    # each of those statements.
    assert read["validation_validationlabel"] < 2 * PAIRS * 5, read
    assert read["collection_pair"] < 3 * PAIRS, read
    after_figures = figures("many")
    no_drift("many")
    tallies.check_and_rebuild(Dataset.objects.get(slug="many"), tallies.CORPUS, repair=True)
    tallies.check_and_rebuild(Dataset.objects.get(slug="many"), worker_tally.TALLY, repair=True)
    assert figures("many") == after_figures
