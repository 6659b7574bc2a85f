"""The MPE judgment task as a study task: a study link sends a participant to MPE
judgments of that study's dataset, each submitted batch counts, and the completion code follows."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from crowd.models import Study, StudySession, TaskKind
from validation.models import ValidationClaim

from .test_mpe_task import make_mpe_items
from .validation_factories import item_field, make_dataset, make_pair

pytestmark = pytest.mark.django_db
PROLIFIC = {"PROLIFIC_PID": "5f1a2b3c4d5e6f7a8b9c0d1e", "STUDY_ID": "60aa11bb22cc33dd44ee55ff", "SESSION_ID": "mpe-001"}


def make_study(dataset, kind=TaskKind.MPE_JUDGMENT, slug="mpe-study", tasks_per_batch=2):
    return Study.objects.create(
        slug=slug,
        name=f"Study {slug}",
        dataset=dataset,
        task_kind=kind,
        tasks_per_batch=tasks_per_batch,
        completion_code="MPE-DONE-7",
        catch_trial_share=0,
    )


def arrive(client, study, params=PROLIFIC):
    return client.get(reverse("study_entry", args=[study.slug]), params)


def submit_next_batch(client, answer="entailment"):
    """Follow the task link to the next batch and answer every item; returns the batch's claims."""
    location = client.get(reverse("validation:mpe-next"))["Location"]
    batch = location.rstrip("/").rsplit("/", 1)[-1]
    claims = list(ValidationClaim.objects.filter(batch=batch))
    response = client.post(location, {item_field(claim.pair_id, claim.worker): answer for claim in claims})
    assert response.status_code == 302, response.content.decode()[:2000]
    return claims


def test_a_prolific_participant_judges_the_studys_items_and_gets_the_completion_code(client):
    _, other_items = make_mpe_items(10, slug="mpe-elsewhere")  # a multi-premise dataset of another study
    dataset, _items = make_mpe_items(10, slug="mpe-studied")
    study = make_study(dataset)

    response = arrive(client, study)
    assert response.status_code == 302 and response["Location"] == reverse("validation:mpe-next")
    session = StudySession.objects.get()
    for _ in range(study.tasks_per_batch):
        claims = submit_next_batch(client)
        # Only this study's dataset, and the claims carry the study session.
        assert {claim.pair.dataset_id for claim in claims} == {dataset.pk}
        assert all(claim.study_session_id == session.pk for claim in claims)
    session.refresh_from_db()
    assert session.tasks_done == 2 and session.is_complete and session.completion_code.startswith("MPE-DONE-7")
    assert not ValidationClaim.objects.filter(pair__in=other_items).exists()
    assert {claim.pair.label_count for claim in ValidationClaim.objects.all()} == {1}

    page = client.get(reverse("validation:mpe-next"))
    assert page.status_code == 200 and session.completion_code in page.content.decode()
    assert ValidationClaim.objects.count() == 10  # no third batch once complete
    # The study link again ends on the session's code, not on more work.
    assert (
        session.completion_code
        in client.get(reverse("study_entry", args=[study.slug]), PROLIFIC, follow=True).content.decode()
    )


def test_a_validation_participant_cannot_take_mpe_batches(client):
    single = make_dataset()
    for _ in range(5):
        make_pair(single)
    mpe_dataset, _ = make_mpe_items(5, slug="mpe-other")
    study = make_study(single, kind=TaskKind.VALIDATION, slug="val-study")
    arrive(client, study)

    response = client.get(reverse("validation:mpe-next"))
    assert response.status_code == 403
    assert "Not part of your study" in response.content.decode()
    assert not ValidationClaim.objects.filter(pair__dataset=mpe_dataset).exists()


def test_an_mpe_participant_cannot_take_validation_batches(client):
    single = make_dataset()
    for _ in range(5):
        make_pair(single)
    mpe_dataset, _ = make_mpe_items(5, slug="mpe-own")
    study = make_study(mpe_dataset)
    arrive(client, study)

    response = client.get(reverse("validation:next"))
    assert response.status_code == 403
    assert "Not part of your study" in response.content.decode()
    assert reverse("validation:mpe-next") in response.content.decode()  # sent back to their own task
    assert not ValidationClaim.objects.filter(pair__dataset=single).exists()


def test_an_mpe_study_on_a_single_premise_dataset_is_refused_with_a_clear_message(db):
    single = make_dataset()
    study = Study(slug="bad-mpe", name="Bad", dataset=single, task_kind=TaskKind.MPE_JUDGMENT, completion_code="X")
    with pytest.raises(ValidationError) as refused:
        study.full_clean()
    assert "needs a multi-premise dataset" in str(refused.value.message_dict["dataset"])
    # A validation study of the same dataset, and an MPE study of a multi-premise one, are fine.
    Study(slug="fine-val", name="Fine", dataset=single, task_kind=TaskKind.VALIDATION, completion_code="X").full_clean()
    mpe_dataset, _ = make_mpe_items(1, slug="mpe-fine")
    Study(
        slug="fine-mpe", name="Fine", dataset=mpe_dataset, task_kind=TaskKind.MPE_JUDGMENT, completion_code="X"
    ).full_clean()


def test_a_validation_or_writing_study_on_an_mpe_dataset_is_refused_with_a_clear_message(db):
    mpe_dataset, _ = make_mpe_items(1, slug="mpe-only")
    for kind in (TaskKind.VALIDATION, TaskKind.WRITING):
        study = Study(slug=f"bad-{kind}", name="Bad", dataset=mpe_dataset, task_kind=kind, completion_code="X")
        with pytest.raises(ValidationError) as refused:
            study.full_clean()
        assert "only an MPE judgment or per-premise study can serve them" in str(refused.value.message_dict["dataset"])


def test_the_admin_refuses_an_mpe_study_on_a_single_premise_dataset(client, make_researcher):
    single = make_dataset()
    researcher = make_researcher(username="ada")
    researcher.is_superuser = True
    researcher.save()
    client.force_login(researcher)
    response = client.post(
        reverse("admin:crowd_study_add"),
        {
            "slug": "bad-mpe",
            "name": "Bad",
            "dataset": single.pk,
            "task_kind": TaskKind.MPE_JUDGMENT,
            "tasks_per_batch": 1,
            "completion_code": "X",
            "catch_trial_share": 0,
            "bonus_per_catch_match": 1,
            "bonus_currency": "USD",
            "payment_per_task": "0.50",
            "access": "open",
            "reports_to_hold_premise": 2,
            "max_reports_per_batch": 2,
            "min_hypothesis_words": 3,
            "is_active": "on",
            "sessions-TOTAL_FORMS": 0,
            "sessions-INITIAL_FORMS": 0,
            "sessions-MIN_NUM_FORMS": 0,
            "sessions-MAX_NUM_FORMS": 0,
        },
    )
    assert response.status_code == 200
    assert "needs a multi-premise dataset" in response.content.decode()
    assert not Study.objects.exists()
