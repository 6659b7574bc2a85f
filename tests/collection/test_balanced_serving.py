"""A writing study's pool served balanced, at random or in import order (in import
order alone, a study pooled on fiction and travel wrote 54 fiction pairs and no travel). Measured on a
two-genre pool imported fiction first: the writers' first lines per genre under each order.
Also the study's own claim minutes."""

from collections import Counter
from datetime import timedelta

import pytest

from collection.writing_claims import claim_next_premise
from corpus.models import Premise
from crowd.models import ServingOrder, Study, StudySession, TaskKind
from tests import factories
from tests.present import present

pytestmark = pytest.mark.django_db

WRITERS = 20


def two_genre_pool(premises_per_genre=30):
    dataset = factories.dataset("pooled", writings_per_premise=1)
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    for genre in (fiction, travel):  # every fiction premise imported before any travel one
        for _ in range(premises_per_genre):
            factories.premise(dataset, genre, split="train")
    return dataset, fiction, travel


def genres_served(dataset, order, make_worker, pool_genres=(), writers=WRITERS):
    study = Study.objects.create(
        slug=f"pooled-{order}",
        name="Pooled",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        completion_code="C",
        serving_order=order,
    )
    study.pool_genres.set(pool_genres)
    served: Counter[str] = Counter()
    for n in range(writers):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"{order}-{n}")
        claim = claim_next_premise(worker, study_session=session)
        assert claim is not None
        served[claim.premise.genre.slug] += 1
    return served


def test_a_balanced_study_serves_both_genres_of_its_pool_half_and_half(make_worker):
    dataset, fiction, travel = two_genre_pool()
    assert genres_served(dataset, ServingOrder.BALANCED, make_worker, [fiction, travel]) == {
        "fiction": 10,
        "travel": 10,
    }


def test_a_balanced_study_without_a_genre_limit_balances_its_datasets_genres(make_worker):
    dataset, _, _ = two_genre_pool()
    assert genres_served(dataset, ServingOrder.BALANCED, make_worker) == {"fiction": 10, "travel": 10}


def test_import_order_serves_the_first_imported_genre_only_as_before(make_worker):
    dataset, fiction, travel = two_genre_pool()
    assert genres_served(dataset, ServingOrder.IMPORTED, make_worker, [fiction, travel]) == {"fiction": WRITERS}


def test_a_random_study_serves_both_genres_in_an_order_of_its_own(make_worker):
    dataset, fiction, travel = two_genre_pool()
    served = genres_served(dataset, ServingOrder.RANDOM, make_worker, [fiction, travel])
    assert served["fiction"] > 0 and served["travel"] > 0


def test_a_balanced_study_goes_on_with_the_other_genre_when_one_runs_dry(make_worker):
    dataset, fiction, travel = two_genre_pool(premises_per_genre=5)
    Premise.objects.filter(genre=travel).exclude(pk__in=Premise.objects.filter(genre=travel)[:2]).delete()
    served = genres_served(dataset, ServingOrder.BALANCED, make_worker, [fiction, travel], writers=7)
    assert served == {"fiction": 5, "travel": 2}


def test_a_study_with_its_own_claim_minutes_holds_lines_that_long(make_worker, settings):
    settings.NLI = {**settings.NLI, "WRITING_CLAIM_MINUTES": 30}
    dataset, _, _ = two_genre_pool(premises_per_genre=1)
    study = Study.objects.create(
        slug="short", name="Short", dataset=dataset, task_kind=TaskKind.WRITING, completion_code="C", claim_minutes=7
    )
    worker = make_worker()
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="s")
    claim = claim_next_premise(worker, study_session=session)
    assert claim is not None
    held = claim.expires_at - claim.created_at
    assert timedelta(minutes=6) < held <= timedelta(minutes=7)


def files_served(study, make_worker, writers):
    served: Counter[str] = Counter()
    for n in range(writers):
        worker = make_worker()
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"file-{n}")
        served[present(claim_next_premise(worker, study_session=session)).premise.source] += 1
    return served


def one_genre_two_files():
    dataset = factories.dataset("pooled-files", writings_per_premise=1)
    fiction = factories.genre("fiction")
    for source in ("first.jsonl", "second.jsonl"):  # every line of the first file imported before the second's
        for _ in range(12):
            Premise.objects.filter(pk=factories.premise(dataset, fiction, split="train").pk).update(source=source)
    study = Study.objects.create(
        slug="pooled-files",
        name="Pooled files",
        dataset=dataset,
        task_kind=TaskKind.WRITING,
        completion_code="C",
        serving_order=ServingOrder.BALANCED,
    )
    return study, fiction


def test_a_balanced_study_of_one_genre_balances_its_datasets_import_files(make_worker):
    study, _ = one_genre_two_files()
    assert files_served(study, make_worker, writers=10) == {"first.jsonl": 5, "second.jsonl": 5}


def test_a_balanced_study_of_one_named_genre_and_two_named_files_balances_those_files(make_worker):
    study, fiction = one_genre_two_files()
    third = factories.premise(study.dataset, fiction, split="train")
    Premise.objects.filter(pk=third.pk).update(source="third.jsonl")
    study.pool_genres.set([fiction])
    Study.objects.filter(pk=study.pk).update(pool_sources=["second.jsonl", "third.jsonl"])
    study.refresh_from_db()
    # The third file holds one line: once it is written, the rest go to the second file.
    assert files_served(study, make_worker, writers=6) == {"second.jsonl": 5, "third.jsonl": 1}
