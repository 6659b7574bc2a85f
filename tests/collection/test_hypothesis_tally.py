"""The cost page's maintained hypothesis count (collection.hypothesis_tally) equals a
fresh count from the pairs and writing claims after writing submits, deletions, a split move, a
fold and a rebuild. The adversarial finish: tests/adversarial/test_hypothesis_tally.py."""

from io import StringIO

import pytest
from django.core.management import call_command

from collection import hypothesis_tally, services, writing_claims
from collection.models import HypothesisTally
from corpus import tallies
from corpus.models import Dataset, Pair, Premise
from corpus.tasks import fold_tallies
from crowd.models import StudySession, TaskKind
from tests.collection.writing_helpers import add_premises, make_study, writing_setup
from tests.present import present

pytestmark = pytest.mark.django_db

TEXTS = {
    "entailment": "A boat departed early in the morning.",
    "neutral": "The boat carried tourists to an island.",
    "contradiction": "The boat never left the harbour.",
}


def write(worker, dataset, session=None, **texts):
    claim = writing_claims.claim_next_premise(worker, dataset=dataset, study_session=session)
    assert claim is not None
    services.submit_hypotheses(worker, claim.token, **{**TEXTS, **texts})
    return claim


def session_of(study, worker):
    return StudySession.objects.create(study=study, worker=worker, external_session_id=f"{study.slug}-{worker.pk}")


@pytest.fixture
def written(make_worker):
    """Two studies writing on train and dev premises, and a writer outside any study."""
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 4, split="train")
    add_premises(dataset, genre, 4, split="dev", start=10)
    one = make_study(dataset, "writing-one", task_kind=TaskKind.WRITING)
    two = make_study(dataset, "writing-two", task_kind=TaskKind.WRITING, completion_code="TWO")
    alice, bob, carol, dan = (make_worker() for _ in range(4))
    for worker, study in ((alice, one), (bob, one), (carol, two)):
        session = session_of(study, worker)
        write(worker, dataset, session)
        write(worker, dataset, session)
    write(dan, dataset)  # no study session: bought by no study, not counted
    return dataset, one, two


def test_writing_submits_keep_the_count_equal_to_a_fresh_count(written):
    dataset, one, two = written
    counts = hypothesis_tally.counts()
    assert counts == hypothesis_tally.fresh_counts()
    by_study = {study: sum(n for (s, *_), n in counts.items() if s == study) for study in (one.pk, two.pk)}
    assert by_study == {one.pk: 12, two.pk: 6}  # 3 hypotheses a task; the writer outside a study is not counted
    assert sum(counts.values()) == 18 and Pair.objects.filter(dataset=dataset).count() == 21


def test_deleting_pairs_and_premises_leaves_the_count_right(written):
    dataset, one, two = written
    present(Pair.objects.filter(dataset=dataset, author__isnull=False).order_by("pk").first()).delete()
    Pair.objects.filter(pk__in=Pair.objects.filter(dataset=dataset).order_by("-pk").values("pk")[:2]).delete()
    Premise.objects.filter(pk=present(Pair.objects.filter(dataset=dataset).order_by("pk").last()).premise_id).delete()
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts()
    assert sum(hypothesis_tally.counts().values()) < 18
    one.delete()  # a study's deletion takes its rows with it (CASCADE), its pairs stay
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts()
    two.delete()
    dataset.delete()  # and a dataset's, with every pair: no delta per pair
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts() == {}
    assert not HypothesisTally.objects.exists()


def test_a_premise_that_moves_split_moves_its_hypotheses(written):
    dataset, _, _ = written
    moving = Premise.objects.filter(pk__in=[p.pk for p in Premise.objects.filter(dataset=dataset, writings_done=1)[:3]])
    hypotheses = sum(hypothesis_tally.fresh_counts(among=Pair.objects.filter(premise__in=moving)).values())
    assert hypotheses > 0
    tallies.premises_moving(moving, "test")  # corpus.signals.pairs_moving_split: the hypotheses follow
    moving.update(split="test")
    counts = hypothesis_tally.counts()
    assert counts == hypothesis_tally.fresh_counts()
    assert sum(n for (_, _, split, _), n in counts.items() if split == "test") == hypotheses


def test_fold_keeps_the_sums_and_rebuild_repairs_what_went_around_the_writers(written):
    dataset, _, _ = written
    before = hypothesis_tally.counts()
    assert HypothesisTally.objects.count() > len(before)  # one delta per submit
    tallies.fold()  # the one fold of every tally
    assert HypothesisTally.objects.count() == len(before) and hypothesis_tally.counts() == before
    # A bulk load around the submit (as bench/run.py's COPY): the count drifts until rebuilt.
    Pair.objects.filter(dataset=dataset, author__isnull=False).update(author=None)
    assert hypothesis_tally.counts() != hypothesis_tally.fresh_counts() == {}
    assert tallies.check_and_rebuild(None, hypothesis_tally.TALLY).keys == len(before)
    assert hypothesis_tally.counts() == {}


def test_the_rebuild_command_recounts_one_dataset_and_leaves_the_others(written):
    dataset, _, _ = written
    other = Dataset.objects.create(slug="elsewhere", name="Elsewhere")
    stray = present(HypothesisTally.objects.first())
    HypothesisTally.objects.create(study_id=stray.study_id, dataset=other, split="", genre_id=stray.genre_id, n=5)
    Pair.objects.filter(dataset=dataset, author__isnull=False).update(author=None)  # around the submit
    drifting = len(hypothesis_tally.counts(dataset))
    out = StringIO()
    call_command("rebuild_tallies", "hypothesis", "--dataset", dataset.slug, stdout=out)
    assert f"drifting from the pairs and writing claims: {drifting} keys" in out.getvalue()
    assert "rebuilt from the pairs and writing claims" in out.getvalue()
    assert hypothesis_tally.counts(dataset) == {}
    assert hypothesis_tally.counts(other) == {(stray.study_id, other.pk, "", stray.genre_id): 5}


def test_no_writing_submit_folds_and_the_one_scheduled_fold_does(
    make_worker, settings, django_capture_on_commit_callbacks
):
    """Without a broker too: a submit's commit never folds on the request's path; the tallies'
    one scheduled fold (corpus.fold_tallies, its one lock) folds the hypothesis tally with the rest."""
    assert any(entry["task"] == fold_tallies.name for entry in settings.CELERY_BEAT_SCHEDULE.values())
    dataset, genre = writing_setup()
    add_premises(dataset, genre, 3, split="train")
    study = make_study(dataset, "writing-one", task_kind=TaskKind.WRITING)
    worker = make_worker()
    session = session_of(study, worker)
    with django_capture_on_commit_callbacks(execute=True):
        write(worker, dataset, session)
        write(worker, dataset, session)
    assert HypothesisTally.objects.count() == 2  # one delta per submit, unfolded
    fold_tallies()
    assert HypothesisTally.objects.count() == 1
    assert hypothesis_tally.counts() == hypothesis_tally.fresh_counts() != {}
