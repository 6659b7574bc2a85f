"""Submitting a batch: all or nothing, once, before it expires; and the pages around it."""

import random
from datetime import timedelta

import pytest
from django.db.models import Count, Q
from django.urls import reverse
from django.utils import timezone

from corpus.gold import gold_from_votes
from corpus.models import Label, Pair, ValidationLabel
from corpus.services import LabelRefused, add_label
from crowd.arrival import SESSION_KEY
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from tests import factories
from tests.present import present
from validation import batch_claims, services
from validation.models import ValidationClaim

from .validation_factories import item_field, make_pair

pytestmark = pytest.mark.django_db


def batch_pairs(batch):
    return list(ValidationClaim.objects.filter(batch=batch).order_by("id").values_list("pair_id", flat=True))


def counters():
    return {
        pk: (count, e, n, c, gold)
        for pk, count, e, n, c, gold in Pair.objects.values_list(
            "pk", "label_count", "entailment_votes", "neutral_votes", "contradiction_votes", "gold_label"
        )
    }


def counters_from_label_table():
    """The counters recomputed from the label table alone, with one aggregate query."""
    rows = Pair.objects.annotate(
        n=Count("labels"),
        e=Count("labels", filter=Q(labels__label=Label.ENTAILMENT)),
        u=Count("labels", filter=Q(labels__label=Label.NEUTRAL)),
        c=Count("labels", filter=Q(labels__label=Label.CONTRADICTION)),
    ).values_list("pk", "n", "e", "u", "c")
    return {pk: (n, e, u, c, gold_from_votes(e, u, c)) for pk, n, e, u, c in rows}


def test_submit_saves_labels_and_closes_the_claims(dataset, make_worker):
    pairs = [make_pair(dataset, label=Label.ENTAILMENT) for _ in range(5)]
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    picks = dict(
        zip(
            batch_pairs(batch),
            [Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION, Label.NEUTRAL, Label.ENTAILMENT],
            strict=False,
        )
    )
    result = services.submit_validation_batch(worker, batch, picks)
    assert len(result.labels) == 5
    saved = dict(ValidationLabel.objects.filter(worker=worker).values_list("pair_id", "label"))
    assert saved == picks
    assert all(label.position == 2 and label.seconds is not None for label in result.labels)
    assert set(ValidationClaim.objects.filter(batch=batch).values_list("status", flat=True)) == {ClaimStatus.SUBMITTED}
    for pair in pairs:
        pair.refresh_from_db()
        assert pair.label_count == 2
        assert pair.entailment_votes == 1 + (picks[pair.pk] == Label.ENTAILMENT)


def test_expired_batch_is_refused_and_nothing_saved(dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(batch_claims.BatchExpired, match="expired"):
        services.submit_validation_batch(worker, batch, dict.fromkeys(batch_pairs(batch), Label.NEUTRAL))
    assert not ValidationLabel.objects.filter(worker=worker).exists()
    assert set(Pair.objects.values_list("label_count", flat=True)) == {1}


def test_double_submit_adds_nothing(dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    picks = dict.fromkeys(batch_pairs(batch), Label.CONTRADICTION)
    services.submit_validation_batch(worker, batch, picks)
    before = counters()
    with pytest.raises(batch_claims.BatchAlreadySubmitted, match="already saved"):
        services.submit_validation_batch(worker, batch, picks)
    assert counters() == before
    assert ValidationLabel.objects.filter(worker=worker).count() == 5


def test_incomplete_batch_is_refused_naming_the_missing_pairs(dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    ids = batch_pairs(batch)
    partial = {ids[0]: Label.NEUTRAL, ids[1]: Label.NEUTRAL, ids[3]: Label.NEUTRAL}
    with pytest.raises(batch_claims.BatchIncomplete, match=r"missing: pair 3, 5") as refused:
        services.submit_validation_batch(worker, batch, partial)
    assert refused.value.missing == [ids[2], ids[4]]
    assert not ValidationLabel.objects.filter(worker=worker).exists()
    assert set(Pair.objects.values_list("label_count", flat=True)) == {1}
    # The claims stay open: the worker can finish the same batch.
    services.submit_validation_batch(worker, batch, dict.fromkeys(ids, Label.NEUTRAL))
    assert ValidationLabel.objects.filter(worker=worker).count() == 5


def test_another_workers_batch_cannot_be_submitted(dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    owner, intruder = make_worker(), make_worker()
    batch = present(batch_claims.claim_validation_batch(owner))
    with pytest.raises(batch_claims.BatchNotFound):
        services.submit_validation_batch(intruder, batch, dict.fromkeys(batch_pairs(batch), Label.NEUTRAL))
    assert not ValidationLabel.objects.filter(worker=intruder).exists()


def test_a_worker_excluded_mid_batch_cannot_submit(dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    factories.exclude(worker)
    with pytest.raises(batch_claims.NotAllowedToValidate):
        services.submit_validation_batch(worker, batch, dict.fromkeys(batch_pairs(batch), Label.NEUTRAL))
    assert not ValidationLabel.objects.filter(worker=worker).exists()
    with pytest.raises(LabelRefused, match="excluded"):
        add_label(present(Pair.objects.first()), Label.NEUTRAL, worker=worker)


def test_counters_equal_the_label_table_after_many_operations(dataset, make_worker):
    rng = random.Random(11)
    authors = [make_worker() for _ in range(3)]
    for number in range(12):
        make_pair(dataset, author=authors[number % 3], label=rng.choice(list(Label)))
    validators = [make_worker() for _ in range(9)]
    for _ in range(40):
        worker = rng.choice(validators)
        batch = batch_claims.claim_validation_batch(worker)
        if batch is None:
            continue
        ids = batch_pairs(batch)
        action = rng.random()
        if action < 0.15:  # walks away: the claim expires
            ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
        elif action < 0.25:  # forgets one pair: refused
            with pytest.raises(batch_claims.BatchIncomplete):
                services.submit_validation_batch(worker, batch, dict.fromkeys(ids[1:], Label.NEUTRAL))
        else:
            services.submit_validation_batch(worker, batch, {pk: rng.choice(list(Label)) for pk in ids})
    assert counters() == counters_from_label_table()
    per_pair = Pair.objects.annotate(n=Count("labels")).values_list("n", flat=True)
    assert max(per_pair) <= 5
    assert ValidationLabel.objects.filter(position__gt=1).count() > 20
    assert Pair.objects.filter(label_count=5).count() >= 6  # the run got pairs all the way to five labels


# --- pages -----------------------------------------------------------------------------------


def login(client, worker):
    client.force_login(worker.user)
    return client


def test_next_redirects_to_a_blind_batch_page(client, dataset, make_worker):
    for _ in range(6):
        make_pair(dataset, label=Label.CONTRADICTION)
    worker = make_worker()
    response = login(client, worker).get(reverse("validation:next"))
    batch = present(ValidationClaim.objects.filter(worker=worker).first()).batch
    assert response.status_code == 302 and response.url == reverse("validation:batch", kwargs={"batch": batch})
    page = client.get(response.url)
    html = page.content.decode()
    assert page.status_code == 200
    assert html.count('<fieldset class="card validation-pair') == 5
    for key, text in (("1", "Definitely correct"), ("2", "Might be correct"), ("3", "Definitely incorrect")):
        assert html.count(f"<kbd>{key}</kbd> {text}") == 5
    assert reverse("validation:faq") in html
    assert "js/validation.js" in html
    # Blind: no label chosen, and no vote counts or gold labels on the page.
    assert " checked" not in html
    assert "votes" not in html and "gold" not in html.lower()
    # A reload of next gives the same batch back.
    assert client.get(reverse("validation:next")).url == response.url


def test_submit_through_the_page(client, dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    worker = make_worker()
    login(client, worker).get(reverse("validation:next"))
    batch = present(ValidationClaim.objects.filter(worker=worker).first()).batch
    ids = batch_pairs(batch)
    url = reverse("validation:batch", kwargs={"batch": batch})
    # Incomplete: refused with a message, nothing saved, the chosen labels still chosen.
    response = client.post(url, {item_field(ids[0]): "neutral", item_field(ids[1]): "contradiction"})
    html = response.content.decode()
    assert response.status_code == 400
    assert "missing: pair 3, 4, 5" in html
    assert f'id="{item_field(ids[0])}-2" value="neutral"\n             data-key="2" checked' in html
    assert not ValidationLabel.objects.filter(worker=worker).exists()
    data = {item_field(pk): "neutral" for pk in ids}
    response = client.post(url, data)
    assert response.status_code == 302 and response.url == reverse("validation:next")
    assert ValidationLabel.objects.filter(worker=worker, label="neutral").count() == 5
    # Posting again (a double click) saves nothing more.
    again = client.post(url, data)
    assert again.status_code == 302
    assert ValidationLabel.objects.filter(worker=worker).count() == 5


def test_a_worker_cannot_open_anothers_batch(client, dataset, make_worker):
    for _ in range(5):
        make_pair(dataset)
    owner, intruder = make_worker(), make_worker()
    batch = batch_claims.claim_validation_batch(owner)
    url = reverse("validation:batch", kwargs={"batch": batch})
    login(client, intruder)
    assert client.get(url).status_code == 404
    assert client.post(url, {item_field(pk): "neutral" for pk in batch_pairs(batch)}).status_code == 404
    assert not ValidationLabel.objects.filter(worker=intruder).exists()


def test_expired_batch_page_says_so(client, dataset, make_worker):
    make_pair(dataset)
    worker = make_worker()
    batch = present(batch_claims.claim_validation_batch(worker))
    ValidationClaim.objects.filter(batch=batch).update(expires_at=timezone.now() - timedelta(seconds=1))
    url = reverse("validation:batch", kwargs={"batch": batch})
    login(client, worker)
    page = client.get(url).content.decode()
    assert "Time ran out on these pairs" in page and "Get these pairs back" in page
    response = client.post(url, {item_field(pk): "neutral" for pk in batch_pairs(batch)})
    # One message, the hold's (not a refusal beside it), and nothing saved.
    assert response.status_code == 409 and "nothing was sent yet" in response.content.decode()
    assert 'id="batch-error"' not in response.content.decode()
    assert not ValidationLabel.objects.filter(worker=worker).exists()


def test_no_tasks_and_excluded_pages(client, dataset, make_worker):
    login(client, make_worker())
    response = client.get(reverse("validation:next"))
    assert response.status_code == 200 and "No pairs to validate right now" in response.content.decode()
    make_pair(dataset)
    # Excluded by the dataset's team (the only one): outside a study none of its pairs is offered.
    login(client, make_worker(is_excluded=True))
    response = client.get(reverse("validation:next"))
    assert response.status_code == 200 and "No pairs to validate right now" in response.content.decode()
    assert not ValidationClaim.objects.exists()


def test_login_is_required(client):
    response = client.get(reverse("validation:next"))
    assert response.status_code == 302 and "next=" in response.url


def test_faq_page(client):
    html = client.get(reverse("validation:faq")).content.decode()
    assert 5 <= html.count("<dt>") <= 9  # nine with "Is there a bonus?"
    assert "Might be correct" in html


def test_validation_study_ends_with_the_completion_code(client, dataset, make_worker):
    for _ in range(10):
        make_pair(dataset)
    study = Study.objects.create(
        slug="val",
        name="Validation study",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=2,
        completion_code="C0DE-VAL",
    )
    worker = make_worker()
    study_session = StudySession.objects.create(study=study, worker=worker, external_session_id="s1")
    login(client, worker)
    session = client.session
    session[SESSION_KEY] = study_session.pk
    session.save()
    for _ in range(2):
        url = client.get(reverse("validation:next")).url
        batch = present(ValidationClaim.objects.filter(worker=worker, status=ClaimStatus.OPEN).first()).batch
        assert ValidationClaim.objects.get(batch=batch, pair_id=batch_pairs(batch)[0]).study_session == study_session
        client.post(url, {item_field(pk, worker): "entailment" for pk in batch_pairs(batch)})
    study_session.refresh_from_db()
    assert study_session.tasks_done == 2 and study_session.is_complete
    response = client.get(reverse("validation:next"))
    assert response.status_code == 200 and "C0DE-VAL" in response.content.decode()
    assert ValidationClaim.objects.filter(worker=worker).count() == 10
