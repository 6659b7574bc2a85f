"""The shape check refuses only where honest writing never trips it, and a study sets it.

Real hypotheses were refused as word salad: 28 of SNLI dev's 10,000 (0.28%) by the shape check
alone, with no study setting to turn it off. Now a hypothesis is refused outright only when its
faults weigh `REFUSE_AT` (at most 0.1% of SNLI dev, all 10,000 parsed here), a doubtful one gets
a warning the writer overrides by sending it again unchanged (counted as a shape flag of the
session), and a study's `shape_check` / `shape_refuse_at` are what the writing submit applies."""

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from collection import services, writing_claims
from collection.models import ShapeRefusal
from collection.sentence_shape import REFUSED, WARNED, ShapeRules, ShapeWarning, shapes, verdict
from collection.writing_rules import TaskRules, hypothesis_problem
from corpus.models import Pair
from crowd.models import StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.conftest import SHARED_DATA
from tests.present import present

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
SALAD = "Banana water purple under city simply chair."  # faults weigh 6: refused outright
# A real SNLI dev hypothesis whose faults weigh 3 (no determiner, a lowercase word read as a name):
# refused before, now a warning.
DOUBTFUL = "father and son watching television at home"


def snli_dev() -> Path:
    path = SHARED_DATA / "snli_1.0_dev.jsonl"
    assert path.exists(), f"{path} is not here (public data lives in ../shared/data; set NLI_SHARED_DATA)"
    return path


def test_at_most_a_tenth_of_a_percent_of_snli_dev_hypotheses_are_refused():
    texts = [json.loads(line)["sentence2"] for line in snli_dev().read_text(encoding="utf-8").splitlines()]
    assert len(texts) == 10_000
    verdicts = [verdict(shape) for shape in shapes(texts)]
    refused = [text for text, found in zip(texts, verdicts, strict=True) if found == REFUSED]
    assert len(refused) <= 0.001 * len(texts), refused
    # The doubtful ones are warned, never refused: about a quarter of a percent.
    assert verdicts.count(WARNED) <= 0.005 * len(texts)


def test_a_doubtful_sentence_is_warned_and_salad_refused_under_the_default_rules():
    assert isinstance(hypothesis_problem("A man rests.", DOUBTFUL, TaskRules(), confirmed=()), ShapeWarning)
    assert hypothesis_problem("A man rests.", DOUBTFUL, TaskRules(), confirmed={DOUBTFUL}) is None
    # Outside a study session nothing records a warning: it is not given.
    assert hypothesis_problem("A man rests.", DOUBTFUL, TaskRules()) is None
    refused = hypothesis_problem("A man rests.", SALAD, TaskRules(), confirmed={SALAD.lower().rstrip(".")})
    assert refused is not None and not isinstance(refused, ShapeWarning)


def test_the_rules_move_with_the_weight_refused_from():
    (shape,) = shapes([DOUBTFUL])
    assert verdict(shape, ShapeRules(refuse_at=3)) == REFUSED
    assert verdict(shape, ShapeRules(check="warn", refuse_at=3)) == WARNED
    assert verdict(shape, ShapeRules(check="off")) is None


def session_of(make_worker, **study_fields) -> StudySession:
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    study = make_study(dataset, tasks_per_batch=2, **study_fields)
    return StudySession.objects.create(study=study, worker=make_worker(), external_session_id="s-shape")


def send(session: StudySession, **texts: str) -> None:
    claim = present(writing_claims.claim_next_premise(session.worker, study_session=session))
    services.submit_hypotheses(session.worker, claim.token, **{**GOOD, **texts})


@pytest.mark.django_db
def test_a_study_with_the_shape_check_off_takes_salad_at_the_writing_submit(make_worker):
    session = session_of(make_worker, shape_check="off")
    send(session, neutral=SALAD)
    assert Pair.objects.filter(hypothesis=SALAD).count() == 1
    assert ShapeRefusal.objects.filter(study_session=session).count() == 0


@pytest.mark.django_db
def test_the_default_study_refuses_salad_again_and_again(make_worker):
    session = session_of(make_worker)
    for _ in range(2):
        with pytest.raises(ValidationError, match="does not read as an English sentence"):
            send(session, neutral=SALAD)
    assert ShapeRefusal.objects.filter(study_session=session).count() == 1


@pytest.mark.django_db
def test_a_warned_sentence_sent_again_unchanged_is_taken_and_counted_as_a_flag(make_worker):
    session = session_of(make_worker)
    with pytest.raises(ValidationError, match="send it again unchanged"):
        send(session, neutral=DOUBTFUL)
    send(session, neutral=DOUBTFUL)
    assert ShapeRefusal.objects.filter(study_session=session).count() == 1


@pytest.mark.django_db
def test_a_study_that_only_warns_takes_salad_sent_twice(make_worker):
    session = session_of(make_worker, shape_check="warn")
    with pytest.raises(ValidationError, match="send it again unchanged"):
        send(session, neutral=SALAD)
    send(session, neutral=SALAD)
    assert ShapeRefusal.objects.filter(study_session=session).count() == 1


@pytest.mark.django_db
def test_a_study_refusing_from_weight_three_refuses_the_doubtful_sentence_for_good(make_worker):
    session = session_of(make_worker, shape_refuse_at=3)
    for _ in range(2):
        with pytest.raises(ValidationError, match="does not read as an English sentence"):
            send(session, neutral=DOUBTFUL)
