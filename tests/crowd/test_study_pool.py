"""A study's pool within its dataset: a study limited to genres or to the files of a
premise import serves only those premises to writers, and only pairs on them to validators
(`crowd.selectors.pool_limits`, applied to both claims' candidates)."""

import pytest
from django.urls import reverse

from collection.models import PremiseImport
from collection.premise_import import import_premises
from collection.writing_claims import claim_next_premise
from corpus.models import Premise, Split
from crowd.models import Study, StudySession, TaskKind
from tests import factories
from validation.batch_claims import claim_validation_batch
from validation.selectors import batch_claims

pytestmark = pytest.mark.django_db


def study_of(dataset, task_kind=TaskKind.WRITING, **fields):
    return Study.objects.create(
        slug=f"s-{task_kind}", name="Pool", dataset=dataset, task_kind=task_kind, completion_code="C", **fields
    )


def session_of(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"s-{worker.pk}")


def test_a_study_limited_to_fiction_never_serves_telephone_premises(make_worker):
    dataset = factories.dataset("mixed", writings_per_premise=1)
    fiction, telephone = factories.genre("fiction"), factories.genre("telephone")
    for _ in range(3):
        factories.premise(dataset, fiction)
        factories.premise(dataset, telephone)
    study = study_of(dataset)
    study.pool_genres.set([fiction])
    served = []
    for _ in range(5):  # more writers than fiction premises
        worker = make_worker()
        claim = claim_next_premise(worker, study_session=session_of(study, worker))
        served.append(None if claim is None else claim.premise.genre.slug)
    assert served == ["fiction"] * 3 + [None, None]  # when fiction runs out: no task, not a transcript


def test_a_study_limited_to_an_import_serves_only_that_imports_premises(make_worker, tmp_path):
    factories.genre("fiction")
    first, second = tmp_path / "first.txt", tmp_path / "second.txt"
    first.write_text("The old man walked slowly down the long road to town. He carried a heavy bag of apples.\n")
    second.write_text("A young woman opened the red door of the bakery. She smiled at the first customer.\n")
    import_premises([first], "fiction", dataset="imported")
    import_premises([second], "fiction", dataset="imported")
    Premise.objects.filter(dataset__slug="imported").update(split=Split.DEV)
    chosen = PremiseImport.objects.get(source="second.txt")
    study = study_of(chosen.dataset, pool_sources=chosen.source.split(", "))
    texts = []
    for _ in range(4):
        worker = make_worker()
        claim = claim_next_premise(worker, study_session=session_of(study, worker))
        if claim is not None:
            texts.append(claim.premise.text)
    assert texts and all(text in second.read_text() for text in texts)
    assert not any(text in first.read_text() for text in texts)


def test_a_validation_study_limited_to_fiction_claims_only_pairs_on_fiction(make_worker):
    dataset = factories.dataset("to-validate")
    fiction, telephone = factories.genre("fiction"), factories.genre("telephone")
    on_fiction = {factories.pair(dataset, factories.premise(dataset, fiction), ["neutral"]).pk for _ in range(3)}
    for _ in range(6):
        factories.pair(dataset, factories.premise(dataset, telephone), ["neutral"])
    study = study_of(dataset, TaskKind.VALIDATION, catch_trial_share=0)
    study.pool_genres.set([fiction])
    worker = make_worker()
    batch = claim_validation_batch(worker, study_session=session_of(study, worker))
    assert batch is not None
    assert {claim.pair_id for claim in batch_claims(worker, batch)} == on_fiction


def test_a_validation_study_whose_pool_is_spent_says_no_task_without_waiting_on_pairs_outside_it(
    make_worker, monkeypatch
):
    """The claim waits a moment when every claimable pair is locked by someone else; pairs outside
    the study's pool are not the study's to wait for."""
    dataset = factories.dataset("to-validate")
    fiction, telephone = factories.genre("fiction"), factories.genre("telephone")
    for _ in range(3):
        factories.pair(dataset, factories.premise(dataset, telephone), ["neutral"])
    study = study_of(dataset, TaskKind.VALIDATION, catch_trial_share=0)
    study.pool_genres.set([fiction])
    waits: list[float] = []
    monkeypatch.setattr("validation.batch_claims.time.sleep", waits.append)
    worker = make_worker()
    assert claim_validation_batch(worker, study_session=session_of(study, worker)) is None
    assert waits == []


def test_the_admin_offers_the_import_files_and_the_genres(admin_client):
    dataset = factories.dataset("adm")
    factories.premise(dataset, factories.genre("fiction"))
    Premise.objects.filter(dataset=dataset).update(source="fiction-1.txt")
    study = study_of(dataset)
    page = admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).content.decode()
    assert 'value="fiction-1.txt"' in page and 'name="pool_genres"' in page
