"""A database filled before the core app existed migrates to it without losing a row.

The test database is emptied and migrated from nothing to the last migrations before `corpus` and
`crowd` took over the shared models (as an installation of that time was made), filled through the
models of that time, then migrated forward. Every row must
come back through today's models, with the same values, and content types (admin history,
permissions) must follow the models to their new apps.
"""

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from tests.present import present

BEFORE_THE_CORE = [
    ("collection", "0004_premise_import_progress"),
    ("validation", "0002_validation_policy"),
    ("importers", "0001_corpus_imports"),
    ("modeling", "0001_initial"),
    ("corpus", None),
    ("crowd", None),
]

pytestmark = pytest.mark.django_db(transaction=True)


def empty_schema():
    """The test database as a fresh installation finds it: no table, no extension, no migration
    applied. Migrating forward from here to the old targets costs a few migrations; unapplying the
    whole history down to them cost about 90 s of the suite's time."""
    with connection.cursor() as cursor:
        cursor.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")


def migrate(targets):
    """Migrate to `targets`; the models as they are there."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    applied = [node for node in executor.loader.graph.leaf_nodes() if node in executor.loader.applied_migrations]
    applied += [target for target in targets if target[1] is not None]
    return executor.loader.project_state(applied).apps


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def fill_old_database(old):
    """What the old `collection`/`validation` apps held: one of everything, linked as the app linked it."""
    User = old.get_model("auth", "User")
    ContentType = old.get_model("contenttypes", "ContentType")
    LogEntry = old.get_model("admin", "LogEntry")
    Genre = old.get_model("collection", "Genre")
    now = timezone.now()

    dataset = old.get_model("collection", "Dataset").objects.create(slug="old", name="Old collection")
    genre = Genre.objects.get(slug="fiction")
    premise = old.get_model("collection", "Premise").objects.create(
        dataset=dataset, genre=genre, prompt_id="101", text="A cat sat on the mat.", text_hash="x", split="dev"
    )
    author_user = User.objects.create(username="author")
    validator_user = User.objects.create(username="validator")
    Worker = old.get_model("collection", "Worker")
    author = Worker.objects.create(user=author_user, market="prolific", external_id="PID1")
    validator = Worker.objects.create(user=validator_user, is_trusted=True)
    study = old.get_model("collection", "Study").objects.create(
        slug="old-study", name="Old study", dataset=dataset, completion_code="CODE"
    )
    session = old.get_model("collection", "StudySession").objects.create(
        study=study, worker=author, external_session_id="S1", tasks_done=1
    )
    claim = old.get_model("collection", "WritingClaim").objects.create(
        worker=author,
        premise=premise,
        study_session=session,
        status="submitted",
        expires_at=now + timedelta(minutes=30),
        submitted_at=now,
    )
    pair = old.get_model("collection", "Pair").objects.create(
        dataset=dataset,
        premise=premise,
        pair_id="101e",
        hypothesis="An animal sat.",
        author_label="entailment",
        author=author,
        writing_claim=claim,
        needs_validation=True,
        label_count=2,
        entailment_votes=2,
    )
    Label = old.get_model("validation", "ValidationLabel")
    Label.objects.create(pair=pair, worker=author, position=1, label="entailment")
    Label.objects.create(pair=pair, worker=validator, position=2, label="entailment", seconds=4.5)
    old.get_model("validation", "ValidationClaim").objects.create(
        worker=validator, pair=pair, status="submitted", expires_at=now
    )
    old.get_model("validation", "ValidationPolicy").objects.create(dataset=dataset, trusted_only=True)
    old.get_model("collection", "PremiseReport").objects.create(premise=premise, worker=author, message="odd")
    old.get_model("collection", "PremiseImport").objects.create(dataset=dataset, genre=genre, source="a.txt")
    old.get_model("importers", "CorpusImport").objects.create(dataset=dataset, source="b.jsonl", split="dev")
    # An installation that has run before has content types and admin history for the old apps.
    pair_type, _ = ContentType.objects.get_or_create(app_label="collection", model="pair")
    LogEntry.objects.create(
        user=validator_user,
        content_type=pair_type,
        object_id=str(pair.pk),
        object_repr="101e",
        action_flag=2,
    )
    return {"pair": pair.pk, "claim": claim.pk, "pair_type": pair_type.pk}


# Apps of the framework an installation of that time had at their own latest migrations.
FRAMEWORK_APPS = ("admin", "auth", "contenttypes", "sessions", "authtoken")


def test_an_old_database_migrates_to_the_core_without_loss():
    empty_schema()
    framework = [node for node in latest() if node[0] in FRAMEWORK_APPS]
    old_apps = migrate(framework + BEFORE_THE_CORE)
    ids = fill_old_database(old_apps)

    migrate(latest())

    from django.contrib.admin.models import LogEntry
    from django.contrib.contenttypes.models import ContentType

    from collection.models import PremiseImport, PremiseReport, WritingClaim
    from corpus.models import Dataset, Pair, Premise, ValidationLabel, Worker
    from crowd.models import Study, StudySession
    from importers.models import CorpusImport
    from validation.models import ValidationClaim, ValidationPolicy

    ContentType.objects.clear_cache()
    pair = Pair.objects.select_related("premise__genre", "dataset", "author__user").get(pk=ids["pair"])
    assert (pair.pair_id, pair.hypothesis, pair.author_label, pair.label_count, pair.entailment_votes) == (
        "101e",
        "An animal sat.",
        "entailment",
        2,
        2,
    )
    assert pair.premise.text == "A cat sat on the mat." and pair.premise.genre.slug == "fiction"
    author = present(pair.author)
    assert author.external_id == "PID1" and author.user.username == "author"
    assert [
        (label.position, present(label.worker).user.username, label.seconds)
        for label in pair.labels.order_by("position")
    ] == [(1, "author", None), (2, "validator", 4.5)]
    claim = WritingClaim.objects.get(pk=ids["claim"])
    # The dropped pair -> claim column is derivable: the claim's pairs are its premise's pairs by its worker.
    assert list(claim.pairs) == [pair]
    assert present(claim.study_session).study.slug == "old-study"
    assert StudySession.objects.get().tasks_done == 1 and Study.objects.get().dataset == pair.dataset
    assert ValidationClaim.objects.get().pair == pair
    assert ValidationPolicy.objects.get().dataset.slug == "old"
    assert PremiseReport.objects.get().premise == pair.premise
    assert PremiseImport.objects.get().genre.slug == "fiction"
    assert CorpusImport.objects.get().dataset.slug == "old"
    assert (
        Dataset.objects.count(),
        Premise.objects.count(),
        Worker.objects.count(),
        ValidationLabel.objects.count(),
    ) == (1, 1, 2, 2)
    # Content types moved with their models, so admin history still points at the pair.
    assert ContentType.objects.get_for_model(Pair).pk == ids["pair_type"]
    assert LogEntry.objects.get().get_edited_object() == pair
    assert not ContentType.objects.filter(app_label="collection", model="pair").exists()
