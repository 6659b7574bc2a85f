"""`manage.py load_demo`: premises for every genre, accounts, studies and consistent demo pairs."""

from collections import Counter
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from corpus.gold import gold_from_votes
from corpus.models import (
    NO_GOLD,
    Dataset,
    FaqEntry,
    Genre,
    Label,
    Pair,
    Premise,
    PromptExample,
    PromptFamily,
    ValidationLabel,
    Worker,
)
from crowd.models import Study, TaskKind
from demo import content as demo_content
from demo.training import DEMO_MODELS
from modeling.models import Snapshot, TrainingRun

pytestmark = pytest.mark.django_db


def load_demo(training=False):
    """The demo command; its snapshot and training runs only where a test is about them (they take seconds)."""
    out = StringIO()
    # The artifacts demo (extra writers' pairs on these premises) has its own test:
    # tests/artifacts/test_demo_artifacts.py; so has the quality demo: tests/quality/test_demo_quality.py.
    call_command(
        "load_demo",
        "--no-artifacts",
        "--no-quality",
        "--no-adversarial",  # tests/adversarial/test_demo_adversarial.py
        *([] if training else ["--no-training"]),
        stdout=out,
    )
    return out.getvalue()


def row_counts():
    models = [
        Dataset,
        Genre,
        PromptFamily,
        PromptExample,
        FaqEntry,
        Premise,
        Pair,
        ValidationLabel,
        Worker,
        Study,
        get_user_model(),
    ]
    return {model.__name__: model.objects.count() for model in models}


def test_load_demo_creates_accounts_and_studies_and_prints_where_to_go(client):
    output = load_demo()
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
    assert researcher.is_staff and researcher.is_superuser
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


def test_every_genre_gets_ten_premises_and_held_out_genres_stay_out_of_train(settings):
    load_demo()
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


def test_demo_dataset_follows_the_default_dataset_setting(settings):
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": "demo-elsewhere"}
    dataset = demo_content.ensure_dataset()
    assert (dataset.slug, dataset.train_validation_fraction) == ("demo-elsewhere", 0.1)
    assert demo_content.ensure_dataset() == dataset


def test_running_it_twice_creates_and_changes_nothing():
    load_demo(training=True)
    before = row_counts()
    runs_before = list(TrainingRun.objects.values_list("pk", "status").order_by("pk"))
    snapshots_before = list(Snapshot.objects.values_list("pk", "content_hash").order_by("pk"))
    pairs_before = list(Pair.objects.values().order_by("id"))
    labels_before = list(ValidationLabel.objects.values("pair_id", "position", "worker_id", "label").order_by("id"))
    password_before = get_user_model().objects.get(username="researcher").password

    output = load_demo(training=True)

    assert row_counts() == before
    assert list(TrainingRun.objects.values_list("pk", "status").order_by("pk")) == runs_before
    assert list(Snapshot.objects.values_list("pk", "content_hash").order_by("pk")) == snapshots_before
    assert list(Pair.objects.values().order_by("id")) == pairs_before
    assert (
        list(ValidationLabel.objects.values("pair_id", "position", "worker_id", "label").order_by("id"))
        == labels_before
    )
    assert get_user_model().objects.get(username="researcher").password == password_before
    assert "already loaded: nothing created." in output


def test_demo_pairs_have_position_one_labels_and_consistent_counters():
    load_demo()
    for genre in Genre.objects.all():
        # The MultiNLI-style demo pairs (the MPE demo items have their own test).
        pairs = Pair.objects.filter(premise__genre=genre).exclude(dataset__slug="mpe-demo").select_related("premise")
        premises = {pair.premise for pair in pairs}
        assert len(premises) == 4, genre.slug
        assert sum(premise.split in ("dev", "test") for premise in premises) >= 2
        for premise in premises:
            mine = [pair for pair in pairs if pair.premise_id == premise.pk]
            assert sorted(pair.author_label for pair in mine) == sorted(Label.values)
            assert len({pair.author_id for pair in mine}) == 1
            assert premise.writings_done == 1
    for pair in Pair.objects.exclude(dataset__slug="mpe-demo").prefetch_related("labels"):
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


def test_validation_hook_gives_dev_and_test_pairs_a_realistic_spread_of_labels():
    load_demo()
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


def test_load_demo_restores_genres_and_families_after_a_flush():
    Genre.objects.all().delete()
    PromptFamily.objects.all().delete()
    load_demo()
    assert Genre.objects.count() == 11 and PromptFamily.objects.count() == 6
    assert Premise.objects.exclude(dataset__slug="mpe-demo").count() == 110  # plus the MPE demo's two caption sets


def test_demo_exports_a_snapshot_and_trains_every_demo_model_with_a_genre_matrix():
    load_demo(training=True)

    snapshot = Snapshot.objects.get()
    assert snapshot.status == "done"
    assert snapshot.row_count == Pair.objects.exclude(dataset__slug="mpe-demo").count()
    names = set(snapshot.files.values_list("name", flat=True))
    assert {
        "train.jsonl",
        "dev_matched.jsonl",
        "dev_mismatched.jsonl",
        "test_matched.tsv",
        "test_mismatched.tsv",
    } <= names
    whole_data_runs = TrainingRun.objects.filter(config__train_genre=None)
    assert sorted(whole_data_runs.values_list("model", flat=True)) == sorted(DEMO_MODELS)
    assert set(TrainingRun.objects.values_list("status", flat=True)) == {"done"}
    for run in whole_data_runs:
        assert run.snapshot_hash == snapshot.content_hash
        assert {"dev_matched", "test_mismatched"} <= set(run.results["accuracy"])
    training_genres = set(Genre.objects.filter(is_training=True).values_list("slug", flat=True))
    per_genre_runs = TrainingRun.objects.exclude(config__train_genre=None)
    assert set(per_genre_runs.values_list("config__train_genre", flat=True)) == training_genres
    assert all("genre_matrix_file" in run.results for run in per_genre_runs)


def test_the_demo_says_how_the_server_starts_only_when_it_does_not_start_by_itself():
    alone = load_demo()
    assert "Start the server (python manage.py runserver)" in alone
    by_make = StringIO()
    call_command("load_demo", "--no-training", "--no-artifacts", "--serving", stdout=by_make)
    assert "the server starts now" in by_make.getvalue() and "Start the server" not in by_make.getvalue()


def test_the_demo_has_mpe_items_built_items_and_an_adjudication_case():
    from corpus.models import ItemKind
    from corpus.selectors import adjudication_queue

    output = load_demo()
    assert "MPE dataset 'mpe-demo': 4 judged items and 2 built items created now" in output
    assert "http://127.0.0.1:8000/validate/mpe/next/" in output
    dataset = Dataset.objects.get(slug="mpe-demo")
    assert dataset.item_kind == ItemKind.MULTI_PREMISE
    assert sorted(pair.pair_id for pair in adjudication_queue(dataset)) == ["demo-2", "demo-4"]
    waiting = Pair.objects.filter(dataset=dataset, label_count=0)
    assert waiting.count() == 2 and all(pair.word_overlap <= 0.5 for pair in waiting)
    assert "0 judged items and 0 built items" in load_demo()


def test_demo_has_recast_pairs_with_provenance_queued_for_the_two_way_task(client):
    from corpus.models import LabelScheme, PairProvenance

    out = StringIO()
    call_command("load_demo", "--no-training", stdout=out)  # the recast demo comes with the extra demos
    output = out.getvalue()
    recast = Dataset.objects.get(slug="demo-recast")
    assert recast.label_scheme == LabelScheme.TWO_WAY and recast.grammaticality_judgments == 3
    pairs = Pair.objects.filter(dataset=recast)
    assert pairs.count() == 10 and not pairs.filter(needs_validation=False).exists()
    assert PairProvenance.objects.filter(pair__dataset=recast, corpus="Kotzias et. al. 2015").count() == 10
    assert "demo-recast" in output and "/validate/grammaticality/" in output
    # The printed two-way study gives a Prolific arrival a batch of these pairs with the two-way buttons.
    url = next(line.split()[-3] for line in output.splitlines() if "two-way validation study" in line)
    page = client.get(url.replace("http://127.0.0.1:8000", ""), follow=True).content.decode()
    assert "Not entailed" in page and 'data-scheme="two_way"' in page


def test_the_printed_mpe_study_link_leads_to_mpe_judgments_and_a_completion_code(client):
    from crowd.models import StudySession
    from validation.models import ValidationClaim

    output = load_demo()
    study = Study.objects.get(slug="demo-mpe")
    assert study.task_kind == TaskKind.MPE_JUDGMENT and study.dataset.slug == "mpe-demo"
    url = next(line.split()[-3] for line in output.splitlines() if "/study/demo-mpe/" in line)
    response = client.get(url.replace("http://127.0.0.1:8000", ""), follow=True)
    batch_url = response.redirect_chain[-1][0]
    assert "/validate/mpe/batch/" in batch_url
    claims = ValidationClaim.objects.filter(study_session__study=study)
    assert claims.count() == 2 and {claim.pair.dataset.slug for claim in claims} == {"mpe-demo"}
    client.post(batch_url, {f"label-{claim.pair_id}": Label.NEUTRAL for claim in claims})
    code = StudySession.objects.get(study=study).completion_code
    assert code.startswith("DEMO-MPE-2468")
    assert code in client.get("/validate/mpe/next/").content.decode()
