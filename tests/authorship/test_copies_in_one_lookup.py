"""A writing submit looks its hypotheses up for near-copies in one statement (`authorship.copies.
nearest_sql`), each on its own premise: every hypothesis gets its own nearest earlier sentence, in
its own place, and none is matched with a sentence on its own premise."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from authorship.copies import copies_of, record_written_sentences
from corpus.models import Pair, Premise, Worker
from tests.collection.writing_helpers import add_premises, writing_setup

pytestmark = pytest.mark.django_db

FIRST = "The tall stranger whistled a cheerful tune beside the lighthouse."
SECOND = "A crowd of children waited patiently outside the closed museum doors."
THIRD = "Several fishermen repaired their torn nets on the quiet wooden pier."
UNSEEN = "An elderly violinist practised scales alone in the empty concert hall."


@pytest.fixture
def premises() -> list[Premise]:
    dataset, genre = writing_setup()
    return add_premises(dataset, genre, 4)


def written(premise: Premise, worker: Worker, hypothesis: str) -> Pair:
    # A writer's pairs on one premise are one of each label.
    label = ("entailment", "neutral", "contradiction")[Pair.objects.filter(premise=premise, author=worker).count()]
    return Pair.objects.create(
        dataset=premise.dataset,
        premise=premise,
        pair_id=f"p{Pair.objects.count()}",
        hypothesis=hypothesis,
        author_label=label,
        author=worker,
    )


def recorded(worker: Worker, pairs: list[Pair]) -> None:
    record_written_sentences(worker, None, pairs, copies_of(worker, None, pairs))


def test_each_hypothesis_gets_its_own_copy_in_its_own_place_from_one_lookup(premises, make_worker):
    earlier = make_worker()
    recorded(earlier, [written(premises[0], earlier, FIRST), written(premises[0], earlier, THIRD)])
    first_id, third_id = (
        Pair.objects.get(author=earlier, hypothesis=text).written_sentence.pk for text in (FIRST, THIRD)
    )

    copier = make_worker()
    pairs = [written(premises[1], copier, text) for text in (THIRD, UNSEEN, FIRST)]
    with CaptureQueriesContext(connection) as statements:
        found = copies_of(copier, None, pairs)

    assert [None if copy is None else copy.sentence_id for copy in found] == [third_id, None, first_id]
    lookups = [q["sql"] for q in statements.captured_queries if "similarity(w.normalised" in q["sql"]]
    assert len(lookups) == 1


def test_a_hypothesis_is_no_copy_of_a_sentence_on_its_own_premise_beside_one_that_is(premises, make_worker):
    earlier = make_worker()
    recorded(earlier, [written(premises[0], earlier, SECOND)])

    copier = make_worker()
    on_the_same_premise, on_another = written(premises[0], copier, SECOND), written(premises[2], copier, SECOND)
    found = copies_of(copier, None, [on_the_same_premise, on_another])

    assert found[0] is None
    assert found[1] is not None and found[1].worker_id == earlier.pk
