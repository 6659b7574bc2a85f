"""Triage in the claim order: with a study's triage model set, the pairs where the model's
label differs from the writer's intended label are claimed first, in the one candidate statement;
with triage off (the default) the statement and the order are as they always were."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from corpus.models import Label
from crowd.models import Study, StudySession, TaskKind
from model_annotators import services
from model_annotators.models import AnnotatorKind, ModelAnnotator, ModelLabel, PromptVersion
from model_annotators.triage import claim_preference
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims
from validation.models import ValidationClaim
from validation.selectors import candidate_statement

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


def triage_setup(slug):
    dataset = make_dataset(slug)
    pairs = [make_pair(dataset, label=E) for _ in range(12)]  # one premise each, the writer's label only
    annotator = ModelAnnotator.objects.create(
        name="triager", dataset=dataset, kind=AnnotatorKind.ENDPOINT, base_url="http://127.0.0.1:9/v1", model_name="m"
    )
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=1, system="s", template="t")
    # The model agrees with the writer on the first nine pairs and disagrees on the last three;
    # an unparseable answer and an older prompt's disagreement never count.
    for pair in pairs[:9]:
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with="validation-v1", outcome="labelled", label=E
        )
    for pair, label in zip(pairs[9:], (N, C, N), strict=True):
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with="validation-v1", outcome="labelled", label=label
        )
    ModelLabel.objects.create(
        annotator=annotator, pair=pairs[0], asked_with="validation-v0", outcome="labelled", label=C
    )
    study = Study.objects.create(
        slug=f"s-{slug}",
        name="s",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="C",
        catch_trial_share=0,
    )
    return pairs, annotator, study


def claimed(study, worker):
    session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"S{worker.pk}")
    with CaptureQueriesContext(connection) as queries:
        batch = batch_claims.claim_validation_batch(worker, study_session=session)
    candidates = [
        q["sql"]
        for q in queries.captured_queries
        if "ORDER BY collection_pair" in q["sql"] or "DESC, collection_pair.id" in q["sql"]
    ]
    return set(ValidationClaim.objects.filter(batch=present(batch)).values_list("pair_id", flat=True)), candidates


def test_with_triage_on_the_first_claims_get_the_pairs_the_model_disputes(make_worker):
    pairs, annotator, study = triage_setup("triage-on")
    services.set_model_use(study, triage_annotator=annotator)

    first, statements = claimed(study, make_worker())

    disputed = {pair.pk for pair in pairs[9:]}
    assert disputed <= first and len(first) == 5
    assert len(statements) == 1 and "model_annotators_modellabel" in statements[0]
    # The next validator gets the disputed pairs too (each takes five labels), before the others.
    second, _ = claimed(study, make_worker())
    assert disputed <= second


def test_with_triage_off_the_order_and_statement_are_unchanged(make_worker):
    pairs, _annotator, study = triage_setup("triage-off")
    services.set_model_use(study, adjudication_help=True)  # a use row without triage
    assert claim_preference(study) is None
    worker = make_worker()

    first, statements = claimed(study, worker)

    assert first == {pair.pk for pair in pairs[:5]}  # closest to complete, then by id: the old order
    assert len(statements) == 1 and "model_annotators" not in statements[0]
    plain, _ = candidate_statement(worker, timezone.now())
    assert "model_annotators" not in plain


def test_turning_triage_on_and_off_takes_effect_at_once(make_worker):
    pairs, annotator, study = triage_setup("triage-toggle")
    assert claim_preference(study) is None  # cached as off
    services.set_model_use(study, triage_annotator=annotator)
    assert claim_preference(study) is not None
    services.set_model_use(study, triage_annotator=None)
    assert claim_preference(study) is None
    services.set_model_use(study, triage_annotator=annotator)
    PromptVersion.objects.create(annotator=annotator, task_kind="validation", version=2, system="s", template="t")
    # Under the new prompt the model has labelled nothing yet: nothing disputed, the old order.
    first, _ = claimed(study, make_worker())
    assert first == {pair.pk for pair in pairs[:5]}
