"""The sense score (authorship.sense) at its edges: a sentence is as alike to itself as a cosine can
be and no pairs give no scores; the share of known words counts each word once, says 1.0 for a
text without words and leaves out digits; a hypothesis exactly at the threshold is not low; a
writer is judged only from five scored hypotheses on, and then exactly where the binomial tail of
the honest rate falls under the test's level; the stored score is the model's cosine rounded to
four places beside the known-word share; unscored pairs are the authored ones without a score,
oldest first, as many as asked for; a pair scored meanwhile keeps its first score; and a submit's
commit queues the scoring only where the settings ask for it, the task then scoring the pairs."""

from datetime import datetime
from typing import Any

import pytest
from celery.signals import before_task_publish
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from scipy.stats import binom
from wordfreq import zipf_frequency

from authorship import sense
from authorship.models import SenseScore
from corpus.models import Label, Pair, Worker
from tests import factories
from tests.conftest import needs_broker

pytestmark = pytest.mark.django_db

PREMISE = "A man in a red shirt rides a bicycle down a busy street."
CLOSE = "A person is riding a bike outside."
FAR = "The patient theorem negotiates a purple violin."


def written(author: Worker | None, hypotheses: list[str], slug: str = "sense-edges") -> list[Pair]:
    # A premise each: one writer writes one neutral hypothesis per premise.
    dataset = factories.dataset(slug)
    return [
        factories.pair(
            dataset, factories.premise(dataset, text=PREMISE), [Label.NEUTRAL], hypothesis=text, author=author
        )
        for text in hypotheses
    ]


def test_a_sentence_is_as_alike_to_itself_as_a_cosine_can_be() -> None:
    same, close, far = sense.similarities([(PREMISE, PREMISE), (PREMISE, CLOSE), (PREMISE, FAR)])
    # Normalised embeddings: the cosine of a sentence with itself is 1, not its squared length.
    assert same == pytest.approx(1.0, abs=1e-4)
    assert far < sense.THRESHOLD < close < same


def test_each_pair_gets_its_own_cosine_in_order_and_no_pairs_get_none() -> None:
    assert sense.similarities([]) == []
    both = sense.similarities([(PREMISE, FAR), (PREMISE, CLOSE)])
    assert both == [pytest.approx(sense.similarities([(PREMISE, FAR)])[0], abs=1e-5), pytest.approx(both[1])]
    assert both[1] == pytest.approx(sense.similarities([(PREMISE, CLOSE)])[0], abs=1e-5)


def test_the_known_word_share_counts_each_word_of_the_text() -> None:
    assert sense.known_word_share("The blorf xqzv sleeps") == 0.5
    assert sense.known_word_share("blorf xqzv") == 0.0
    assert sense.known_word_share("The MAN sleeps") == 1.0
    # Digits and punctuation are no words: a text of them has nothing unknown.
    assert sense.known_word_share("123 456 !!") == 1.0
    assert sense.known_word_share("") == 1.0
    assert sense.known_word_share("blorf 123") == 0.0


def test_a_hypothesis_exactly_at_the_threshold_is_not_low() -> None:
    assert not sense.is_low_sense(sense.THRESHOLD)
    assert sense.is_low_sense(sense.THRESHOLD - 1e-9)
    assert not sense.is_low_sense(sense.THRESHOLD + 1e-9)


def test_a_writer_is_judged_from_five_scored_hypotheses_on() -> None:
    assert not sense.writer_low_sense(4, 4)
    assert sense.writer_low_sense(5, 5)
    # Three of five are beyond chance; had four been too few to judge, this would pass unjudged.
    assert sense.writer_low_sense(3, 5)
    assert not sense.writer_low_sense(0, 5)


@pytest.mark.parametrize("scored", [5, 6, 10, 20, 40, 100])
def test_a_writer_is_judged_exactly_where_the_binomial_tail_falls_under_the_level(scored: int) -> None:
    verdicts = [sense.writer_low_sense(low, scored) for low in range(scored + 1)]
    expected = [
        low > 0 and binom.sf(low - 1, scored, sense.HONEST_LOW_RATE) < sense.WRITER_ALPHA for low in range(scored + 1)
    ]
    assert verdicts == expected
    # Each list turns from "not judged" to "judged" once, somewhere inside it.
    assert not verdicts[1] and verdicts[-1]


def test_the_stored_score_is_the_cosine_rounded_beside_the_known_word_share(make_worker: Any) -> None:
    writer = make_worker()
    close, far = written(writer, [CLOSE, "The blorf xqzv sleeps quietly"])
    stored = sense.score_pairs([close, far])
    assert [row.pair_id for row in stored] == [close.pk, far.pk]
    cosines = sense.similarities([(PREMISE, CLOSE), (PREMISE, far.hypothesis)])
    rows = {row.pair_id: row for row in SenseScore.objects.all()}
    assert rows[close.pk].similarity == round(cosines[0], 4)
    assert rows[far.pk].similarity == round(cosines[1], 4)
    assert rows[close.pk].known_word_share == 1.0
    assert rows[far.pk].known_word_share == 0.6
    assert rows[close.pk].worker_id == writer.pk and rows[close.pk].low_sense is False
    assert rows[close.pk].method == sense.METHOD == "all-MiniLM-L6-v2 cosine < 0.05"


def test_a_pair_scored_meanwhile_keeps_its_first_score(make_worker: Any) -> None:
    (pair,) = written(make_worker(), [FAR])
    sense.score_pairs([pair])
    first = SenseScore.objects.get(pair=pair)
    sense.score_pairs([pair])  # a second task that read the pair before the first stored it
    assert SenseScore.objects.get(pair=pair).pk == first.pk
    assert SenseScore.objects.count() == 1


def test_unscored_pairs_are_the_authored_ones_without_a_score_oldest_first(make_worker: Any) -> None:
    writer = make_worker()
    first, second, third = written(writer, [CLOSE, FAR, "A man is outside."])
    written(None, ["Nobody wrote this one."], slug="sense-imported")
    assert sense.unscored_pairs() == [first, second, third]
    assert sense.unscored_pairs(2) == [first, second]
    assert sense.score_unscored(1) == 1
    assert list(SenseScore.objects.values_list("pair_id", flat=True)) == [first.pk]
    assert sense.unscored_pairs() == [second, third]
    assert sense.score_unscored() == 2
    assert sense.unscored_pairs() == []
    assert sense.score_unscored() == 0


def run_submits_commit(hypotheses: list[str], worker: Worker) -> list[Pair]:
    with transaction.atomic():
        pairs = written(worker, hypotheses)
        sense.sense_arriving()
    return pairs


@pytest.mark.django_db(transaction=True)
def test_the_commit_scores_the_pairs_where_arrivals_are_tagged(settings: Any, make_worker: Any) -> None:
    # Without a broker the queued task runs in the caller: what a Celery worker would do, now.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.ARTIFACTS_ON_ARRIVAL = True
    (pair,) = run_submits_commit([FAR], make_worker())
    assert SenseScore.objects.get(pair=pair).low_sense


@pytest.mark.django_db(transaction=True)
def test_the_sense_setting_overrides_where_arrivals_are_tagged(settings: Any, make_worker: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.ARTIFACTS_ON_ARRIVAL = True
    settings.SENSE_ON_ARRIVAL = False
    worker = make_worker()
    run_submits_commit([FAR], worker)
    assert not SenseScore.objects.exists()
    settings.ARTIFACTS_ON_ARRIVAL = False
    settings.SENSE_ON_ARRIVAL = True
    (pair,) = run_submits_commit([CLOSE], worker)
    assert SenseScore.objects.filter(pair=pair).exists()


@pytest.mark.django_db(transaction=True)
def test_nothing_is_queued_where_arrivals_are_not_tagged(settings: Any, make_worker: Any) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDED_TASKS = "inline"
    settings.ARTIFACTS_ON_ARRIVAL = False
    run_submits_commit([FAR], make_worker())
    assert not SenseScore.objects.exists()


def test_a_word_the_lists_know_however_rarely_counts_as_known() -> None:
    # Two rare Thai letters joined by an apostrophe: the lists know the word, under Zipf 1.
    rare = "\u0e04'\u0e04"
    assert 0 < zipf_frequency(rare, "en") <= 1
    assert sense.known_word_share(rare) == 1.0
    assert sense.known_word_share(f"blorf {rare}") == 0.5


def test_the_stored_known_word_share_keeps_four_places(make_worker: Any) -> None:
    (pair,) = written(make_worker(), ["The blorf sleeps"])
    sense.score_pairs([pair])
    assert SenseScore.objects.get(pair=pair).known_word_share == 0.6667


def test_a_batch_of_unscored_pairs_reads_its_premises_in_the_same_query(
    make_worker: Any, django_assert_num_queries: Any
) -> None:
    written(make_worker(), [CLOSE, FAR, "A man is outside."])
    with django_assert_num_queries(1):
        premises = [pair.premise.text for pair in sense.unscored_pairs()]
    assert premises == [PREMISE] * 3


def test_a_pair_without_an_author_is_never_credited_to_a_worker(make_worker: Any) -> None:
    # Worker #1 exists: a pair without an author must not be stored as its hypothesis.
    if not Worker.objects.filter(pk=1).exists():
        make_worker(pk=1)
    (pair,) = written(None, [CLOSE], slug="sense-unauthored")
    with pytest.raises(IntegrityError), transaction.atomic():
        sense.score_pairs([pair])
        connection.check_constraints()  # the worker key is checked at commit: check it now


def test_a_submit_queues_the_scoring_a_coalescing_window_after_its_commit(
    settings: Any, make_worker: Any, django_capture_on_commit_callbacks: Any
) -> None:
    needs_broker()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.ARTIFACTS_ON_ARRIVAL = True
    published: list[dict[str, Any]] = []

    def note(sender: str | None = None, headers: dict[str, Any] | None = None, **kwargs: Any) -> None:
        published.append({"task": sender, **(headers or {})})

    before_task_publish.connect(note, weak=False, dispatch_uid="tests.sense_publish")
    try:
        before = timezone.now()
        with django_capture_on_commit_callbacks(execute=True):
            written(make_worker(), [FAR])
            sense.sense_arriving()
    finally:
        before_task_publish.disconnect(dispatch_uid="tests.sense_publish")
    (message,) = [m for m in published if m["task"] == sense.SCORE_TASK]
    # Queued to start a window later (the autouse fixture revokes it when the test ends).
    eta = datetime.fromisoformat(message["eta"])
    assert (eta - before).total_seconds() >= sense.COALESCE_SECONDS
    assert not SenseScore.objects.exists()  # nothing scored in the caller
