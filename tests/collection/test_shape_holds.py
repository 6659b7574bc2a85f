"""Shape refusals as a session's evidence: word salad is refused three
times in four, so a bot that keeps sending it got a salad through now and then and earned codes. A
study session's refusals are now recorded, and a session refused again and again has its code held
with a reason researchers see (collection/shape_holds.py); honest writers are not held."""

import json
from itertools import groupby

import pytest
from django.core.exceptions import ValidationError

from collection import services, writing_claims
from collection.models import ShapeRefusal
from collection.sentence_shape import SHAPE_HOLD_MIN_REFUSALS, held_for_shape, shapes, verdict
from collection.shape_holds import SALAD_HOLD_PREFIX
from crowd.models import StudySession
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.conftest import shared_file
from tests.present import present

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}
SALADS = [
    "Banana water purple under city simply chair.",
    "Blue city chair over yellow water beside.",
    "Man street purple simply under beside dog.",
    "Big water simply small over banana.",
    "Table city house small dog beside.",
]


@pytest.fixture
def session(db, make_worker):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3)
    study = make_study(dataset, tasks_per_batch=1)
    return StudySession.objects.create(study=study, worker=make_worker(), external_session_id="s-salad")


def send(session, claim, **texts):
    services.submit_hypotheses(session.worker, claim.token, **{**GOOD, **texts})


def refused(session, claim, **texts):
    with pytest.raises(ValidationError):
        send(session, claim, **texts)


def test_a_session_refused_for_salad_again_and_again_has_its_code_held_with_the_reason(session):
    claim = present(writing_claims.claim_next_premise(session.worker, study_session=session))
    refused(session, claim, entailment=SALADS[0], neutral=SALADS[1], contradiction=SALADS[2])
    refused(session, claim, entailment=SALADS[3], neutral=SALADS[4])
    send(session, claim)  # the sixth try of the bot is what got through before
    session.refresh_from_db()
    assert session.completed_at is not None and session.completion_code == ""
    assert session.code_held_reason.startswith(SALAD_HOLD_PREFIX)
    assert "5 of the 8 hypotheses sent were refused" in session.code_held_reason
    assert ShapeRefusal.objects.filter(study_session=session).count() == 5


def test_an_honest_writer_refused_once_gets_the_code(session):
    claim = present(writing_claims.claim_next_premise(session.worker, study_session=session))
    refused(session, claim, neutral=SALADS[0])
    send(session, claim)
    session.refresh_from_db()
    assert session.completion_code == session.expected_completion_code() and session.code_held_reason == ""


def test_a_page_sent_again_unchanged_counts_its_refused_sentence_once(session):
    claim = present(writing_claims.claim_next_premise(session.worker, study_session=session))
    for _ in range(4):
        refused(session, claim, neutral=SALADS[0])
    send(session, claim)
    session.refresh_from_db()
    assert ShapeRefusal.objects.filter(study_session=session).count() == 1
    assert session.code_held_reason == ""


def test_refusals_for_other_rules_are_not_shape_evidence(session):
    claim = present(writing_claims.claim_next_premise(session.worker, study_session=session))
    for text in ("Hi.", "Two words", "<b>A man is outside.</b>", "Ok ok."):
        refused(session, claim, neutral=text)
    send(session, claim)
    session.refresh_from_db()
    assert not ShapeRefusal.objects.exists() and session.code_held_reason == ""


@pytest.mark.parametrize(
    "refusals, sent, held",
    [(SHAPE_HOLD_MIN_REFUSALS - 1, SHAPE_HOLD_MIN_REFUSALS - 1, False), (3, 15, True), (3, 16, False), (6, 8, True)],
)
def test_the_threshold_needs_both_a_count_and_a_share(refusals, sent, held):
    assert held_for_shape(refusals, sent) is held


def test_no_honest_snli_writer_would_be_held():
    """SNLI dev's writers simulated by their real hypotheses (a caption's three are one worker's
    task), the first 3,000 in sessions of 1 and of 5 tasks; bench/shape_holds.py runs all 10,000."""
    rows = [json.loads(line) for line in shared_file("snli_1.0_dev.jsonl").read_text(encoding="utf-8").splitlines()]
    rows = rows[:3000]
    # A warning counts as a refusal does (the session's shape flags).
    refused_flags = [verdict(shape) is not None for shape in shapes([row["sentence2"] for row in rows])]
    tasks = [
        [refused_flags[i] for i, _ in group] for _, group in groupby(enumerate(rows), key=lambda r: r[1]["captionID"])
    ]
    assert sum(map(sum, tasks)) > 0  # some real hypotheses are refused: the simulation has something to hold
    for per_session in (1, 5):
        for start in range(0, len(tasks), per_session):
            session = tasks[start : start + per_session]
            refusals = sum(map(sum, session))
            assert not held_for_shape(refusals, sum(map(len, session)) + refusals), session
