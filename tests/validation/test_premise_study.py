"""The per-premise task (MPE §5.2) as a study task: a study of kind "premise" sends its participants
to that task (annotation_site.wiring.NEXT_TASK_URL) on its dataset alone, each submitted batch
counts towards the session, and the completion code follows; its pages are validation's BatchTask."""

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse

from annotation_site.wiring import NEXT_TASK_URL
from crowd.models import Study, StudySession, TaskKind
from validation.models import PremiseLabelClaim

from .premise_helpers import field_of, make_items
from .test_mpe_study import PROLIFIC, arrive, make_study
from .validation_factories import make_dataset

pytestmark = pytest.mark.django_db


def submit_next_batch(client, answer="neutral"):
    location = client.get(reverse("validation:premise-next"))["Location"]
    batch = location.rstrip("/").rsplit("/", 1)[-1]
    claims = list(PremiseLabelClaim.objects.filter(batch=batch).select_related("premise_pair__item"))
    response = client.post(location, {field_of(claim.premise_pair_id, claim.worker): answer for claim in claims})
    assert response.status_code == 302, response.content.decode()[:2000]
    return claims


def test_a_participant_labels_the_studys_premise_pairs_and_gets_the_completion_code(client):
    _, other_items = make_items(3, slug="spe-elsewhere")
    dataset, _ = make_items(6, slug="spe-studied", start=100)
    study = make_study(dataset, kind=TaskKind.PREMISE_LABELS, slug="spe-study")

    response = arrive(client, study)
    assert response.status_code == 302 and response["Location"] == reverse(NEXT_TASK_URL[TaskKind.PREMISE_LABELS])
    session = StudySession.objects.get()
    for _ in range(study.tasks_per_batch):
        claims = submit_next_batch(client)
        assert {claim.premise_pair.item.dataset_id for claim in claims} == {dataset.pk}
        assert all(claim.study_session_id == session.pk for claim in claims)
    session.refresh_from_db()
    assert session.tasks_done == 2 and session.is_complete and session.completion_code.startswith("MPE-DONE-7")
    assert not PremiseLabelClaim.objects.filter(premise_pair__item__in=other_items).exists()

    page = client.get(reverse("validation:premise-next"))
    assert page.status_code == 200 and session.completion_code in page.content.decode()
    assert PremiseLabelClaim.objects.count() == 10  # no third batch once complete
    assert (
        session.completion_code
        in client.get(reverse("study_entry", args=[study.slug]), PROLIFIC, follow=True).content.decode()
    )


def test_a_participant_of_another_study_kind_is_not_served_premise_pairs(client):
    dataset, _ = make_items(2)
    arrive(client, make_study(dataset, kind=TaskKind.MPE_JUDGMENT, slug="mpe-judging"))
    response = client.get(reverse("validation:premise-next"))
    assert response.status_code != 302
    assert not PremiseLabelClaim.objects.exists()


def test_a_premise_study_needs_a_multi_premise_dataset():
    study = Study(slug="spe-wrong", name="x", dataset=make_dataset(), task_kind=TaskKind.PREMISE_LABELS)
    with pytest.raises(ValidationError) as refused:
        study.check_dataset_fits_task()
    assert "multi-premise dataset" in str(refused.value.message_dict["dataset"])


def test_every_study_kind_has_a_next_task():
    assert set(NEXT_TASK_URL) == set(TaskKind)
    for kind in TaskKind:
        reverse(NEXT_TASK_URL[kind])
