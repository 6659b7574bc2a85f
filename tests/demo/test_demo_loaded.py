"""`manage.py load_demo` read after one load: the demo is loaded once for this module (the loads
that must start from an empty database, or train, are in test_demo.py).

The load runs inside a transaction that the module's end rolls back, and each test runs in a
savepoint of it (pytest-django's `db`), so what one test changes is gone before the next: every
test sees the demo exactly as one `load_demo` leaves it, as if it had loaded it itself.
"""

from collections import Counter
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import override_settings

from base.permissions import is_researcher
from corpus.gold import gold_from_votes
from corpus.models import NO_GOLD, Dataset, Genre, Label, Pair, Premise, ValidationLabel, Worker
from corpus.prompt_install import install_prompt_content
from corpus.scope import Scope
from crowd.models import Study, TaskKind
from demo import content as demo_content
from tests.demo.test_demo import load_demo
from tests.present import present

pytestmark = pytest.mark.django_db


@pytest.fixture(scope="module")
def demo_output(django_db_setup, django_db_blocker):
    """What `load_demo` printed; the demo stays in the database until the module ends."""
    # The suite's password hasher (tests/conftest.py sets it per test, after this fixture), so the
    # demo's printed logins work in the tests.
    hashers = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    with django_db_blocker.unblock(), transaction.atomic():
        install_prompt_content()  # as a migrated database has it (tests/conftest.py)
        with hashers:
            output = load_demo()
        yield output
        transaction.set_rollback(True)


def test_load_demo_creates_accounts_and_studies_and_prints_where_to_go(client, demo_output):
    output = demo_output
    for expected in [
        "http://127.0.0.1:8000/",
        "researcher / researcher-demo",
        "worker / worker-demo",
        "http://127.0.0.1:8000/study/demo-writing/?PROLIFIC_PID=demo-pid-1&STUDY_ID=demo-study&SESSION_ID=demo-session-1",
        "http://127.0.0.1:8000/study/demo-validation/?PROLIFIC_PID=",
        "http://127.0.0.1:8000/dashboard/",
        "http://127.0.0.1:8000/admin/",
    ]:
        assert expected in output

    # The printed logins work.
    User = get_user_model()
    researcher = User.objects.get(username="researcher")
    # A researcher by the group's permissions, not a superuser (base/permissions.py).
    assert researcher.is_staff and not researcher.is_superuser
    assert researcher.groups.filter(name="researchers").exists() and is_researcher(researcher)
    assert client.login(username="researcher", password="researcher-demo")
    client.logout()
    worker_user = User.objects.get(username="worker")
    assert not worker_user.is_staff and not worker_user.is_superuser
    assert Worker.objects.filter(user=worker_user).exists()
    assert client.login(username="worker", password="worker-demo")
    for name in demo_content.DEMO_AUTHORS + demo_content.DEMO_VALIDATORS:
        demo_worker = Worker.objects.get(user__username=name)
        assert not demo_worker.user.has_usable_password() and not demo_worker.user.is_staff

    writing = Study.objects.get(slug="demo-writing")
    assert (writing.task_kind, writing.tasks_per_batch, writing.completion_code) == (
        TaskKind.WRITING,
        3,
        "DEMO-WRITE-1234",
    )
    validation = Study.objects.get(slug="demo-validation")
    assert (validation.task_kind, validation.tasks_per_batch, validation.completion_code) == (
        TaskKind.VALIDATION,
        2,
        "DEMO-VALID-5678",
    )
    assert writing.dataset == validation.dataset == Dataset.objects.get(slug="collected")


def test_every_genre_gets_ten_premises_and_held_out_genres_stay_out_of_train(settings, demo_output):
    dataset = Dataset.objects.get(slug=settings.NLI["DEFAULT_DATASET"])
    assert dataset.train_validation_fraction == 0.1
    for genre in Genre.objects.all():
        premises = Premise.objects.filter(dataset=dataset, genre=genre)
        splits = Counter(premises.values_list("split", flat=True))
        assert premises.count() >= 10, genre.slug
        if genre.is_training:
            assert splits["train"] == 6 and splits["dev"] == 2 and splits["test"] == 2, (genre.slug, splits)
        else:
            assert splits["train"] == 0 and splits["dev"] == 5 and splits["test"] == 5, (genre.slug, splits)
        assert all(p.prompt_id == f"{genre.slug}-demo-{n}" for n, p in enumerate(premises.order_by("id"), start=1))
    # Our own sentences: no two premises alike, none shorter than MultiNLI's eight-character floor.
    texts = list(Premise.objects.values_list("text", flat=True))
    assert len(set(texts)) == len(texts)
    assert min(map(len, texts)) >= 8


def test_demo_pairs_have_position_one_labels_and_consistent_counters(demo_output):
    for genre in Genre.objects.all():
        # The MultiNLI-style demo pairs (the MPE demo items and the decided-rule set have their own tests).
        pairs = (
            Pair.objects.filter(premise__genre=genre)
            .exclude(dataset__slug__in=["mpe-demo", "demo-decided"])
            .select_related("premise")
        )
        premises = {pair.premise for pair in pairs}
        assert len(premises) == 4, genre.slug
        assert sum(premise.split in ("dev", "test") for premise in premises) >= 2
        for premise in premises:
            mine = [pair for pair in pairs if pair.premise_id == premise.pk]
            assert sorted(pair.author_label for pair in mine) == sorted(Label.values)
            assert len({pair.author_id for pair in mine}) == 1
            assert premise.writings_done == 1
    for pair in Pair.objects.exclude(dataset__slug__in=["mpe-demo", "demo-decided"]).prefetch_related("labels"):
        labels = list(pair.labels.all())
        first = labels[0]
        assert (first.position, first.label, first.worker_id) == (1, pair.author_label, pair.author_id)
        assert pair.pair_id == f"{pair.premise.prompt_id}{pair.author_label[0]}"
        assert [label.position for label in labels] == list(range(1, len(labels) + 1))
        assert all(label.worker_id != pair.author_id for label in labels[1:])
        votes = Counter(label.label for label in labels)
        assert pair.label_count == len(labels)
        assert (pair.entailment_votes, pair.neutral_votes, pair.contradiction_votes) == (
            votes["entailment"],
            votes["neutral"],
            votes["contradiction"],
        )
        assert pair.gold_label == gold_from_votes(votes["entailment"], votes["neutral"], votes["contradiction"])
        if pair.premise.split in ("dev", "test"):
            assert pair.needs_validation


def test_validation_hook_gives_dev_and_test_pairs_a_realistic_spread_of_labels(demo_output):
    dev_test = Pair.objects.filter(premise__split__in=["dev", "test"])
    train = Pair.objects.filter(premise__split="train")
    assert set(train.values_list("label_count", flat=True)) == {1}
    counts = Counter(dev_test.values_list("label_count", flat=True))
    assert counts[5] > 0 and sum(n for count, n in counts.items() if count < 5) > 0
    complete = dev_test.filter(label_count=5)
    with_gold = complete.exclude(gold_label=NO_GOLD)
    # Validators mostly agree with the author.
    assert with_gold.count() >= 0.8 * complete.count()
    agreeing = ValidationLabel.objects.filter(pair__in=dev_test, position__gte=2)
    same = sum(label.label == label.pair.author_label for label in agreeing.select_related("pair"))
    assert 0.7 <= same / agreeing.count() < 1.0


def test_the_demo_says_how_the_server_starts_only_when_it_does_not_start_by_itself(demo_output):
    alone = demo_output
    assert "Start the server (python manage.py runserver)" in alone
    by_make = StringIO()
    call_command("load_demo", "--no-training", "--no-artifacts", "--serving", stdout=by_make)
    assert "the server starts now" in by_make.getvalue() and "Start the server" not in by_make.getvalue()


def test_the_demo_has_mpe_items_built_items_and_an_adjudication_case(demo_output):
    from corpus.models import ItemKind
    from corpus.selectors import adjudication_queue

    output = demo_output
    assert "MPE dataset 'mpe-demo': 4 judged items and 2 built items created now" in output
    assert "http://127.0.0.1:8000/validate/mpe/next/" in output
    dataset = Dataset.objects.get(slug="mpe-demo")
    assert dataset.item_kind == ItemKind.MULTI_PREMISE
    assert sorted(pair.pair_id for pair in adjudication_queue(Scope.of_dataset(dataset))) == ["demo-2", "demo-4"]
    waiting = Pair.objects.filter(dataset=dataset, label_count=0)
    assert waiting.count() == 2 and all(present(pair.word_overlap) <= 0.5 for pair in waiting)
    assert "0 judged items and 0 built items" in load_demo()


def test_the_printed_mpe_study_link_leads_to_mpe_judgments_and_a_completion_code(client, demo_output):
    from crowd.models import StudySession
    from validation.forms import claim_field_name
    from validation.models import ValidationClaim

    output = demo_output
    study = Study.objects.get(slug="demo-mpe")
    assert study.task_kind == TaskKind.MPE_JUDGMENT and study.dataset.slug == "mpe-demo"
    url = next(line.split()[-3] for line in output.splitlines() if "/study/demo-mpe/" in line)
    response = client.get(url.replace("http://127.0.0.1:8000", ""), follow=True)
    batch_url = response.redirect_chain[-1][0]
    assert "/validate/mpe/batch/" in batch_url
    claims = ValidationClaim.objects.filter(study_session__study=study)
    assert claims.count() == 2 and {claim.pair.dataset.slug for claim in claims} == {"mpe-demo"}
    client.post(batch_url, {claim_field_name(claim): Label.NEUTRAL for claim in claims})
    code = StudySession.objects.get(study=study).completion_code
    assert code.startswith("DEMO-MPE-2468")
    assert code in client.get("/validate/mpe/next/").content.decode()


def test_the_demo_studies_pay_per_task_so_the_cost_page_has_figures(client, demo_output):
    from crowd.models import StudySession
    from dashboard.queries.costs import cost_overview
    from validation.models import ValidationClaim

    assert not Study.objects.filter(payment_per_task=0).exists()
    dataset = Dataset.objects.get(slug="collected")
    validation = Study.objects.get(slug="demo-validation")
    labels = ValidationClaim.objects.filter(study_session__study=validation, is_catch_trial=False).count()
    assert labels == ValidationLabel.objects.filter(pair__dataset=dataset, position__gt=1).count() > 0
    sessions = StudySession.objects.filter(study=validation, external_session_id__startswith="demo-demo-")
    assert sessions.exists() and all(s.tasks_done > 0 for s in sessions)
    overview = cost_overview(Scope.of_dataset(dataset))
    row = next(row for row in overview["studies"] if row.study == validation)
    assert row.labels_bought == labels and row.tasks == sum(s.tasks_done for s in sessions)
    assert str(row.task_money) == f"{row.tasks * validation.payment_per_task} {validation.bonus_currency}"
    assert overview["totals"]["gold"] > 0 and not overview["totals"]["cost_per_gold"].is_zero
    assert overview["projection"]["remaining_pairs"] > 0 and overview["projection"]["cost"] is not None
    client.force_login(get_user_model().objects.get(username="researcher"))
    page = client.get("/dashboard/costs/?dataset=collected").content.decode()
    assert 'id="stat-spent"' in page and "Nothing spent yet" not in page


def test_demo_validation_labels_come_with_their_claims_and_a_demo_validator_can_submit_a_batch(demo_output):
    """The demo's labels are added outside the task; each gets its submitted claim, so a demo validator's
    claim history is true and the batch they are served holds no pair they labelled (else every submit
    of that batch would be refused)."""
    from validation import batch_claims
    from validation import services as validation_services
    from validation.models import ValidationClaim

    labels = ValidationLabel.objects.filter(position__gte=2, worker__isnull=False, pair__premise__source="demo")
    assert labels.exists()
    claimed = set(ValidationClaim.objects.values_list("worker_id", "pair_id"))
    assert all((label.worker_id, label.pair_id) in claimed for label in labels)
    validator = Worker.objects.get(user__username=demo_content.DEMO_VALIDATORS[0])
    batch = batch_claims.claim_validation_batch(validator)
    assert batch is not None
    served = list(ValidationClaim.objects.filter(batch=batch, is_catch_trial=False).values_list("pair_id", flat=True))
    assert not ValidationLabel.objects.filter(worker=validator, pair_id__in=served).exists()
    answers = dict.fromkeys(ValidationClaim.objects.filter(batch=batch).values_list("pair_id", flat=True), "neutral")
    validation_services.submit_validation_batch(validator, batch, answers)
    assert ValidationClaim.objects.filter(batch=batch, status="submitted").count() == len(answers)
