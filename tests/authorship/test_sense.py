"""The sense score (authorship.sense): a written hypothesis is scored against its premise off the
request path (a task queued once the submit commits), stored beside it, shown to researchers on the
pairs page and counted in the writer's figures on the workers page; grammatical nonsense is low,
an honest hypothesis about the premise, a contradiction included, is not (a contradiction about
something else can be: bench/RESULTS-sense.md counts them, and one low hypothesis never judges a
writer). The model is the real one, loaded from the
registry package's files."""

import pytest
from django.test import override_settings
from django.urls import reverse

from authorship import sense
from authorship.models import SenseScore
from authorship.selectors import sense_by_worker, typing_flags_by_worker
from authorship.tasks import score_sense
from corpus.models import Label
from tests import factories
from tests.authorship import records
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

PREMISE = "A man in a red shirt rides a bicycle down a busy street."
HONEST = {
    "entailment": "A person is riding a bike outside.",
    "neutral": "The man is on his way to work.",
    "contradiction": "Nobody is riding a bicycle.",
}
NONSENSE = [
    "The patient theorem negotiates a purple violin.",
    "Every frozen democracy forgives the vinegar.",
    "A calendar digests the ancient mortgage sideways.",
    "The syllable of the glacier paints a curious opinion.",
    "A loud theorem forgives the hollow democracy twice.",
]

pytestmark = pytest.mark.django_db


def written(author, hypotheses):
    # A dataset of the test's own: the pairs page lists it whatever other tests left committed.
    dataset = factories.dataset("sense-scored")
    return [
        factories.pair(dataset, factories.premise(dataset, text=PREMISE), [label], hypothesis=text, author=author)
        for label, text in hypotheses
    ]


def test_nonsense_is_low_and_honest_writing_is_not(make_worker):
    honest, bot = make_worker(), make_worker()
    honest_pairs = written(honest, list(HONEST.items()))
    bot_pairs = written(bot, [(Label.CONTRADICTION, text) for text in NONSENSE])
    assert sense.score_unscored() == len(honest_pairs) + len(bot_pairs)
    scores = {score.pair_id: score for score in SenseScore.objects.all()}
    assert not any(scores[pair.pk].low_sense for pair in honest_pairs)
    assert all(scores[pair.pk].low_sense for pair in bot_pairs)
    assert scores[bot_pairs[0].pk].worker == bot and scores[bot_pairs[0].pk].method == sense.METHOD
    assert sense.score_unscored() == 0  # each pair once


def test_the_writers_figures_count_low_sense_and_judge_the_writer(make_worker):
    honest, bot = make_worker(), make_worker()
    written(honest, list(HONEST.items()) * 2)
    written(bot, [(Label.CONTRADICTION, text) for text in NONSENSE])
    sense.score_unscored()
    figures = sense_by_worker([honest.pk, bot.pk])
    assert figures[honest.pk] == {"sense_scored": 6, "low_sense": 0, "low_sense_writer": 0}
    assert figures[bot.pk] == {"sense_scored": 5, "low_sense": 5, "low_sense_writer": 1}
    # The workers page reads the writer's figures here (typing and sense side by side).
    assert typing_flags_by_worker([bot.pk])[bot.pk]["low_sense_writer"] == 1


def test_one_low_hypothesis_never_judges_a_writer():
    assert not sense.writer_low_sense(1, 1)
    assert not sense.writer_low_sense(1, 10)
    assert sense.writer_low_sense(5, 5)


def test_researchers_see_the_score_on_the_pairs_page(client, researcher, make_worker):
    (pair,) = written(make_worker(), [(Label.CONTRADICTION, NONSENSE[0])])
    sense.score_unscored()
    client.force_login(researcher)
    page = client.get(reverse("dashboard:pairs"), {"dataset": pair.dataset.slug}).content.decode()
    assert pair.hypothesis in page
    assert 'data-stat="sense" data-low="1"' in page


def test_a_writing_submit_queues_the_score_after_its_commit(django_capture_on_commit_callbacks, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 5)
    study = make_study(dataset, slug="sense-study", tasks_per_batch=1)
    worker = make_worker()
    from collection import services, writing_claims
    from crowd.models import StudySession

    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s1")
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    records.age_claim(claim.token)
    with override_settings(SENSE_ON_ARRIVAL=True), django_capture_on_commit_callbacks(execute=False) as callbacks:
        services.submit_hypotheses(
            worker,
            claim.token,
            typing_evidence=records.page({k: records.typed(v) for k, v in HONEST.items()}),
            **HONEST,
        )
    assert not SenseScore.objects.exists()  # nothing scored in the request
    assert any(callback.__qualname__.startswith("sense_arriving.") for callback in callbacks)
    assert score_sense() == 3  # what the queued task does
    assert SenseScore.objects.filter(worker=worker).count() == 3
