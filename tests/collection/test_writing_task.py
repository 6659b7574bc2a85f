"""The hypothesis-writing task: claiming, the page, submitting, its rules (MultiNLI §2.1, SNLI §2.1)."""

from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone

from collection import services, writing_claims
from collection.models import PremiseReport, WritingClaim
from corpus.models import (
    NO_GOLD,
    Dataset,
    FaqEntry,
    Pair,
    Premise,
    PremiseStatus,
    ValidationLabel,
)
from crowd.models import ClaimStatus, StudySession
from crowd.services import record_task_done
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

GOOD = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


@pytest.fixture
def setup(db):
    return writing_setup()


@pytest.fixture
def worker_client(client, make_worker):
    worker = make_worker()
    client.force_login(worker.user)
    client.worker = worker
    return client


# --- claiming --------------------------------------------------------------------------------


def test_claim_holds_a_premise_for_the_configured_minutes(setup, make_worker, settings):
    dataset, genre = setup
    add_premises(dataset, genre, 3)
    worker = make_worker()
    before = timezone.now()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert claim.status == ClaimStatus.OPEN
    assert claim.worker == worker
    minutes = settings.NLI["WRITING_CLAIM_MINUTES"]
    assert before + timedelta(minutes=minutes) <= claim.expires_at <= timezone.now() + timedelta(minutes=minutes)


def test_reload_returns_the_same_open_claim(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 3)
    worker = make_worker()
    first = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    again = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert again.pk == first.pk
    assert WritingClaim.objects.filter(worker=worker).count() == 1


def test_reload_of_the_next_page_redirects_to_the_same_task(setup, worker_client):
    dataset, genre = setup
    add_premises(dataset, genre, 3)
    first = worker_client.get(reverse("writing_next"))
    second = worker_client.get(reverse("writing_next"))
    assert first.status_code == 302
    assert first["Location"] == second["Location"]
    assert WritingClaim.objects.filter(worker=worker_client.worker).count() == 1


def test_stale_claim_is_expired_and_the_worker_gets_another_premise(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    worker = make_worker()
    stale = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    WritingClaim.objects.filter(pk=stale.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    fresh = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    stale.refresh_from_db()
    assert stale.status == ClaimStatus.EXPIRED
    assert fresh.pk != stale.pk
    assert fresh.premise_id != stale.premise_id  # never the same premise twice


def test_a_worker_never_gets_the_same_premise_twice(setup, make_worker):
    dataset, genre = setup
    dataset.writings_per_premise = 5
    dataset.save()
    premises = add_premises(dataset, genre, 3)
    worker = make_worker()
    seen = []
    while (claim := writing_claims.claim_next_premise(worker, dataset=dataset)) is not None:
        seen.append(claim.premise_id)
        services.submit_hypotheses(worker, claim.token, **GOOD)
    assert sorted(seen) == sorted(p.pk for p in premises)


def test_expired_claim_of_another_worker_returns_to_the_pool(setup, make_worker):
    dataset, genre = setup
    (premise,) = add_premises(dataset, genre, 1)
    first, second = make_worker(), make_worker()
    claim = present(writing_claims.claim_next_premise(first, dataset=dataset))
    assert writing_claims.claim_next_premise(second, dataset=dataset) is None
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert present(writing_claims.claim_next_premise(second, dataset=dataset)).premise == premise


def test_only_available_premises_with_a_split_are_served(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1, split="", start=0)
    add_premises(dataset, genre, 1, start=10, status=PremiseStatus.HELD)
    add_premises(dataset, genre, 1, start=20, status=PremiseStatus.RETIRED)
    assert writing_claims.claim_next_premise(make_worker(), dataset=dataset) is None
    (good,) = add_premises(dataset, genre, 1, split="dev", start=30)
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise == good


def test_writings_per_premise_limits_claims_and_submissions(setup, make_worker):
    dataset, genre = setup
    dataset.writings_per_premise = 2
    dataset.save()
    (premise,) = add_premises(dataset, genre, 1)
    a, b, c = make_worker(), make_worker(), make_worker()
    claim_a = present(writing_claims.claim_next_premise(a, dataset=dataset))
    claim_b = present(writing_claims.claim_next_premise(b, dataset=dataset))
    assert claim_a.premise == claim_b.premise == premise
    assert writing_claims.claim_next_premise(c, dataset=dataset) is None  # two open claims fill it
    services.submit_hypotheses(a, claim_a.token, **GOOD)
    assert writing_claims.claim_next_premise(c, dataset=dataset) is None  # one written + one open
    services.submit_hypotheses(b, claim_b.token, **GOOD)
    premise.refresh_from_db()
    assert premise.writings_done == 2
    assert sorted(Pair.objects.filter(premise=premise).values_list("pair_id", flat=True)) == [
        "0c",
        "0c2",
        "0e",
        "0e2",
        "0n",
        "0n2",
    ]


def test_least_written_premises_come_first(setup, make_worker):
    dataset, genre = setup
    dataset.writings_per_premise = 3
    dataset.save()
    busy, quiet = add_premises(dataset, genre, 2)
    Premise.objects.filter(pk=busy.pk).update(writings_done=2)
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise == quiet


def test_without_a_dataset_the_default_collection_is_used(setup, make_worker, settings):
    dataset, genre = setup
    other = Dataset.objects.create(slug="other-collection", name="Other")
    add_premises(other, genre, 2, start=100)
    (mine,) = add_premises(dataset, genre, 1)
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": dataset.slug}
    assert present(writing_claims.claim_next_premise(make_worker())).premise == mine


def test_imported_corpora_are_never_served_when_no_default_exists(setup, make_worker, settings):
    dataset, genre = setup
    snli = Dataset.objects.create(slug="snli-test", name="SNLI", is_imported=True)
    add_premises(snli, genre, 2, start=100)
    (mine,) = add_premises(dataset, genre, 1)
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": "no-such-dataset"}
    worker = make_worker()
    assert present(writing_claims.claim_next_premise(worker)).premise == mine
    services.submit_hypotheses(worker, present(writing_claims.claim_next_premise(worker)).token, **GOOD)
    assert writing_claims.claim_next_premise(worker) is None


def test_no_premise_left_shows_a_friendly_page(setup, worker_client, settings):
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": setup[0].slug}
    response = worker_client.get(reverse("writing_next"))
    assert response.status_code == 200
    assert "No writing tasks right now" in response.content.decode()
    assert not WritingClaim.objects.exists()


def test_writing_pages_need_a_login(client, setup):
    response = client.get(reverse("writing_next"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


# --- submitting ------------------------------------------------------------------------------


def test_submit_creates_three_pairs_by_the_contract(setup, make_worker):
    dataset, genre = setup
    (premise,) = add_premises(dataset, genre, 1, split="dev")
    premise.prompt_id = "31193"
    premise.save()
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    result = services.submit_hypotheses(worker, claim.token, **GOOD)

    pairs = {pair.author_label: pair for pair in Pair.objects.filter(premise=premise)}
    assert {p.pk for p in result.pairs} == {p.pk for p in pairs.values()}
    assert set(pairs) == {"entailment", "neutral", "contradiction"}
    for label, pair in pairs.items():
        assert pair.hypothesis == GOOD[label]
        assert pair.pair_id == f"31193{label[0]}"
        assert pair.dataset == dataset and pair.author == worker and pair in claim.pairs
        assert pair.genre == genre and pair.split == "dev"
        assert pair.label_count == 1
        assert pair.gold_label == NO_GOLD
        assert pair.needs_validation is True  # dev pairs always get validated
        votes = {name: getattr(pair, f"{name}_votes") for name in ("entailment", "neutral", "contradiction")}
        assert votes == {name: int(name == label) for name in votes}
        (author_label,) = ValidationLabel.objects.filter(pair=pair)
        assert (author_label.position, author_label.worker, author_label.label) == (1, worker, label)
    premise.refresh_from_db()
    claim.refresh_from_db()
    assert premise.writings_done == 1
    assert claim.status == ClaimStatus.SUBMITTED and claim.submitted_at is not None


@pytest.mark.parametrize("fraction, expected", [(0.0, False), (1.0, True)])
def test_train_pairs_need_validation_by_the_datasets_fraction(db, make_worker, fraction, expected):
    dataset, genre = writing_setup(slug=f"train-{fraction}", train_validation_fraction=fraction)
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    services.submit_hypotheses(worker, claim.token, **GOOD)
    assert list(Pair.objects.values_list("needs_validation", flat=True)) == [expected] * 3


@pytest.mark.parametrize(
    "change, field, message",
    [
        ({"neutral": "   "}, "neutral", "Please write a sentence here."),
        ({"entailment": "PREMISE number 0 says, the boat left the harbour at dawn!"}, "entailment", "repeats the line"),
        (
            {"contradiction": "a boat departed early in the morning"},
            "contradiction",
            "same as your 'definitely correct'",
        ),
        ({"neutral": "x" * 501}, "neutral", "under 500 characters"),
    ],
)
def test_bad_hypotheses_are_refused_and_nothing_is_saved(setup, make_worker, change, field, message):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    with pytest.raises(ValidationError) as raised:
        services.submit_hypotheses(worker, claim.token, **{**GOOD, **change})
    assert list(raised.value.message_dict) == [field]
    assert message in raised.value.message_dict[field][0]
    claim.refresh_from_db()
    assert claim.status == ClaimStatus.OPEN
    assert not Pair.objects.exists() and not ValidationLabel.objects.exists()
    assert Premise.objects.get().writings_done == 0


def test_the_page_shows_the_message_beside_the_field_and_keeps_the_text(setup, worker_client):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    claim = present(writing_claims.claim_next_premise(worker_client.worker, dataset=dataset))
    url = reverse("writing_task", args=[claim.token])
    response = worker_client.post(url, {**GOOD, "neutral": GOOD["entailment"].upper()}, follow=True)
    page = response.content.decode()
    # Post/redirect/get: the refusal is shown by a GET of the task, so a reload never posts it again.
    assert response.redirect_chain == [(url, 302)] and response.status_code == 200
    assert "same as your &#x27;definitely correct&#x27; sentence" in page
    assert 'id="neutral-errors"' in page
    assert GOOD["entailment"].upper() in page and GOOD["contradiction"] in page
    assert not Pair.objects.exists()
    # Shown once: a reload is the empty task, which the browser's draft fills with what was typed since.
    again = worker_client.get(url).content.decode()
    assert 'id="neutral-errors"' not in again and GOOD["contradiction"] not in again
    response = worker_client.post(url, GOOD)
    assert response.status_code == 302
    assert Pair.objects.count() == 3


def test_the_task_page_shows_the_prompt_family(setup, worker_client):
    dataset, genre = setup
    (premise,) = add_premises(dataset, genre, 1)
    claim = present(writing_claims.claim_next_premise(worker_client.worker, dataset=dataset))
    page = worker_client.get(reverse("writing_task", args=[claim.token])).content.decode()
    family = genre.family
    assert premise.text in page
    assert "Write three sentences." in page  # the family's instructions
    for wording in (family.entailment_prompt, family.neutral_prompt, family.contradiction_prompt):
        assert wording in page
    for example in family.examples.all():
        assert example.hypothesis in page
    assert reverse("faq", args=[family.slug]) in page
    assert "Report a problem with this line" in page
    assert "held for you until" in page


def test_faq_page_renders_entries_and_examples(setup, client):
    family = setup[1].family
    FaqEntry.objects.create(
        family=family, question="May I write about the author?", answer="Yes, if it fits.", position=1
    )
    page = client.get(reverse("faq", args=[family.slug])).content.decode()
    assert "May I write about the author?" in page and "Yes, if it fits." in page
    assert "A man waits for a bus." in page
    assert client.get(reverse("faq", args=["no-such-family"])).status_code == 404


def test_double_submit_saves_once_and_says_so(setup, worker_client):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    claim = present(writing_claims.claim_next_premise(worker_client.worker, dataset=dataset))
    services.submit_hypotheses(worker_client.worker, claim.token, **GOOD)
    with pytest.raises(writing_claims.ClaimAlreadySubmitted):
        services.submit_hypotheses(worker_client.worker, claim.token, **GOOD)
    response = worker_client.post(reverse("writing_task", args=[claim.token]), GOOD, follow=True)
    assert "already saved" in response.content.decode()
    assert Pair.objects.count() == 3
    # ...and it moves on to a fresh task.
    assert response.redirect_chain[-1][0] != reverse("writing_task", args=[claim.token])


def test_an_expired_claim_saves_nothing_and_offers_a_fresh_task(setup, worker_client):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    claim = present(writing_claims.claim_next_premise(worker_client.worker, dataset=dataset))
    WritingClaim.objects.filter(pk=claim.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    with pytest.raises(writing_claims.ClaimExpired):
        services.submit_hypotheses(worker_client.worker, claim.token, **GOOD)
    response = worker_client.post(reverse("writing_task", args=[claim.token]), GOOD)
    page = response.content.decode()
    assert "This task expired" in page and reverse("writing_next") in page
    assert not Pair.objects.exists()
    assert Premise.objects.filter(writings_done__gt=0).count() == 0


def test_someone_elses_claim_is_a_404(setup, worker_client, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    other = make_worker()
    claim = present(writing_claims.claim_next_premise(other, dataset=dataset))
    url = reverse("writing_task", args=[claim.token])
    assert worker_client.get(url).status_code == 404
    assert worker_client.post(url, GOOD).status_code == 404
    with pytest.raises(WritingClaim.DoesNotExist):
        services.submit_hypotheses(worker_client.worker, claim.token, **GOOD)
    assert not Pair.objects.exists()


def test_a_report_with_three_sentences_saves_them_and_a_second_reporter_holds_the_premise(setup, make_worker):
    dataset, genre = setup
    dataset.writings_per_premise = 3
    dataset.save()
    (premise,) = add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    result = services.submit_hypotheses(worker, claim.token, problem_report="Half a sentence is missing.", **GOOD)
    premise.refresh_from_db()
    assert len(result.pairs) == 3 and Pair.objects.count() == 3
    assert premise.status == PremiseStatus.AVAILABLE and premise.writings_done == 1  # one report: not yet
    report = PremiseReport.objects.get()
    assert (report.premise, report.worker, report.message) == (premise, worker, "Half a sentence is missing.")
    second = make_worker()
    claim = present(writing_claims.claim_next_premise(second, dataset=dataset))
    services.submit_hypotheses(second, claim.token, "", "", "", problem_report="The line stops in the middle.")
    premise.refresh_from_db()
    assert premise.status == PremiseStatus.HELD
    assert writing_claims.claim_next_premise(make_worker(), dataset=dataset) is None  # held: served to nobody


def test_a_report_alone_releases_the_claim_and_saves_no_pairs(setup, make_worker):
    dataset, genre = setup
    premise, other = add_premises(dataset, genre, 2)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    assert claim.premise == premise
    result = services.submit_hypotheses(worker, claim.token, "", "", "", problem_report="Not English.")
    claim.refresh_from_db()
    premise.refresh_from_db()
    assert result.pairs == [] and not Pair.objects.exists()
    assert claim.status == ClaimStatus.RELEASED
    assert premise.status == PremiseStatus.AVAILABLE and premise.writings_done == 0  # back in the pool
    assert PremiseReport.objects.get().message == "Not English."
    assert present(writing_claims.claim_next_premise(worker, dataset=dataset)).premise == other


def test_a_report_with_only_some_sentences_asks_for_the_rest(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    worker = make_worker()
    claim = present(writing_claims.claim_next_premise(worker, dataset=dataset))
    with pytest.raises(ValidationError) as raised:
        services.submit_hypotheses(worker, claim.token, GOOD["entailment"], "", "", problem_report="Odd line.")
    assert set(raised.value.message_dict) == {"neutral", "contradiction"}
    assert not PremiseReport.objects.exists()
    assert Premise.objects.get().status == PremiseStatus.AVAILABLE


# --- study sessions --------------------------------------------------------------------------


def test_record_task_done_completes_the_session_at_the_batch_size(setup, make_worker):
    dataset, _ = setup
    study = make_study(dataset, tasks_per_batch=2)
    session = StudySession.objects.create(study=study, worker=make_worker(), external_session_id="s1")
    record_task_done(session)
    session.refresh_from_db()
    assert session.tasks_done == 1 and session.completed_at is None
    record_task_done(session)
    session.refresh_from_db()
    assert session.tasks_done == 2 and session.is_complete


def test_submitting_counts_the_task_for_the_study_session(setup, make_worker):
    dataset, genre = setup
    add_premises(dataset, genre, 2)
    worker = make_worker()
    session = StudySession.objects.create(study=make_study(dataset), worker=worker, external_session_id="s1")
    claim = present(writing_claims.claim_next_premise(worker, study_session=session))
    assert claim.study_session == session
    services.submit_hypotheses(worker, claim.token, **GOOD)
    session.refresh_from_db()
    assert session.tasks_done == 1 and session.is_complete


# --- home, login, admin ----------------------------------------------------------------------


def test_home_for_a_worker_shows_the_next_task_buttons_and_counts(setup, worker_client):
    dataset, genre = setup
    add_premises(dataset, genre, 1)
    claim = present(writing_claims.claim_next_premise(worker_client.worker, dataset=dataset))
    services.submit_hypotheses(worker_client.worker, claim.token, **GOOD)
    page = worker_client.get(reverse("home")).content.decode()
    assert "Next writing task" in page and "Next validation task" in page
    assert reverse("writing_next") in page and "/validate/" in page
    assert 'data-count="pairs_written">3<' in page
    assert 'data-count="premises_written">1<' in page
    assert "/dashboard/" not in page


def test_home_for_a_researcher_links_the_dashboard_and_admin(client, researcher):
    client.force_login(researcher)
    page = client.get(reverse("home")).content.decode()
    assert 'href="/dashboard/"' in page and 'href="/admin/"' in page
    assert "Next writing task" not in page


def test_login_and_logout(client, make_worker):
    worker = make_worker(username="ann", password="ann-pass-12")
    page = client.get(reverse("login")).content.decode()
    assert 'name="username"' in page and 'name="password"' in page
    bad = client.post(reverse("login"), {"username": "ann", "password": "wrong"})
    assert bad.status_code == 200 and "_auth_user_id" not in client.session
    good = client.post(reverse("login"), {"username": "ann", "password": "ann-pass-12"})
    assert good["Location"] == reverse("home")
    assert int(client.session["_auth_user_id"]) == worker.user.pk
    client.post(reverse("logout"))
    assert "_auth_user_id" not in client.session


def test_workers_never_see_the_admin(worker_client):
    assert worker_client.get("/admin/").status_code == 403


def test_never_claimed_premises_are_served_before_one_held_by_an_open_claim(setup, make_worker):
    """ORDER BY writings_done, claims_made, id: with room for two writers on the first premise,
    the second writer still gets the second premise, so a claim never walks past open claims."""
    dataset, genre = setup
    dataset.writings_per_premise = 2
    dataset.save()
    first_premise, second_premise = add_premises(dataset, genre, 2)
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == first_premise.pk
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == second_premise.pk
    # Both claimed once: the first premise's second place comes next.
    assert present(writing_claims.claim_next_premise(make_worker(), dataset=dataset)).premise_id == first_premise.pk


def test_faq_page_does_not_show_the_researchers_family_name(setup, client):
    family = setup[1].family
    family.name = "Captions (photo descriptions, SNLI-style)"
    family.save(update_fields=["name"])
    page = client.get(reverse("faq", args=[family.slug])).content.decode()
    assert "SNLI" not in page and "frequently asked questions" in page
