"""Worker quality from SQL: the figures match the pure statistics, and the flags follow."""

import random

import pytest

from corpus.exclusions import set_workers_excluded
from corpus.models import AUTHOR_POSITION, Label, Pair, Worker
from corpus.scope import Scope
from corpus.services import add_label
from quality import flags as flag_rules
from quality.models import CatchTrialAnswer
from quality.selectors import worker_quality
from quality.services import auto_exclude_flagged
from teams.models import default_team_id
from tests.validation.validation_factories import make_dataset, make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION
LABELS = [E, N, C]

pytestmark = pytest.mark.django_db


def by_worker(rows):
    return {row.worker.pk: row for row in rows}


def test_sql_figures_equal_the_pure_leave_one_out_figures(make_worker):
    rng = random.Random(7)
    dataset = make_dataset()
    validators = [make_worker() for _ in range(7)]
    for number in range(30):
        truth = LABELS[number % 3]
        pair = make_pair(dataset, label=truth)
        for worker in rng.sample(validators, 4):
            label = truth if rng.random() < 0.7 else rng.choice(LABELS)
            add_label(pair, label, worker=worker, seconds=rng.uniform(2, 20))
    # The same figures from the pure module, fed the label table.
    pairs = []
    for pair in Pair.objects.prefetch_related("labels"):
        votes = tuple(
            flag_rules.Vote(
                worker=str(label.worker_id or f"author-{pair.pk}"),  # Vote names workers by strings
                label=label.label,
                seconds=label.seconds if label.position > AUTHOR_POSITION else None,
            )
            for label in sorted(pair.labels.all(), key=lambda row: row.position)
        )
        pairs.append(flag_rules.PairVotes(pair_id=pair.pair_id, votes=votes))
    expected = {figures.worker: figures for figures in flag_rules.worker_figures(pairs)}
    rows = by_worker(worker_quality(Scope.of_dataset(dataset)))
    for worker in validators:
        row, want = rows[worker.pk], expected[str(worker.pk)]
        assert row.labels_given == want.n_labels
        assert row.label_counts == want.label_counts
        assert (row.loo_items, row.loo_agreements) == (want.loo_items, want.loo_agreements)
        assert row.loo_own_label_counts == want.loo_own_label_counts
        assert row.loo_gold_counts == want.loo_gold_counts
        assert row.timed_items == want.timed_items
        # The median is the seconds histogram's (corpus.worker_tally): within 4.6% (half a bucket on
        # its log scale); tests/corpus/test_worker_tally.py checks where the flags need it exact.
        assert row.median_seconds == pytest.approx(want.median_seconds, rel=0.046)


def test_leave_one_out_uses_three_of_the_other_four(make_worker):
    dataset = make_dataset()
    me, a, b, c = (make_worker() for _ in range(4))
    # Others: E (author), E, E, N -> gold E without me; I said N: scored, disagreeing.
    p1 = make_pair(dataset, label=E)
    for worker, label in ((me, N), (a, E), (b, E), (c, N)):
        add_label(p1, label, worker=worker)
    # Others: E, N, N, C -> no gold without me (2-1-1), although with my N the pair's gold is N.
    p2 = make_pair(dataset, label=E)
    for worker, label in ((me, N), (a, N), (b, N), (c, C)):
        add_label(p2, label, worker=worker)
    p2.refresh_from_db()
    assert p2.gold_label == N
    row = by_worker(worker_quality(Scope.of_dataset(dataset)))[me.pk]
    assert (row.labels_given, row.loo_items, row.loo_agreements) == (2, 1, 0)
    assert row.label_counts == {N: 2}


def test_an_excluded_workers_label_is_scored_against_all_counted_labels(make_worker):
    dataset = make_dataset()
    me, a, b, c = (make_worker() for _ in range(4))
    pair = make_pair(dataset, label=E)
    for worker, label in ((me, C), (a, E), (b, E), (c, N)):
        add_label(pair, label, worker=worker)
    set_workers_excluded(Worker.objects.filter(pk=me.pk), True, teams=[default_team_id()])
    # Counted: E, E, E, N (4 labels, gold E); my C is not among them, so nothing is subtracted.
    row = by_worker(worker_quality(Scope.of_dataset(dataset)))[me.pk]
    assert (row.loo_items, row.loo_agreements) == (1, 0)


def test_catch_accuracy_and_writers_share(make_worker):
    dataset = make_dataset()
    writer, validator = make_worker(), make_worker()
    others = [make_worker() for _ in range(4)]
    # Two five-label pairs by the writer: one gold = their label, one gold differs.
    for author_label, votes in ((E, [E, E, N, C]), (N, [C, C, C, N])):
        pair = make_pair(dataset, author=writer, label=author_label)
        for worker, label in zip(others, votes, strict=False):
            add_label(pair, label, worker=worker)
    traps = [make_pair(dataset) for _ in range(4)]
    for trap, matched in zip(traps, (True, True, True, False), strict=False):
        CatchTrialAnswer.objects.create(
            worker=validator,
            pair=trap,
            batch="00000000-0000-0000-0000-000000000001",
            label=E,
            expected=E if matched else N,
            matched=matched,
        )
    rows = by_worker(worker_quality(Scope.of_dataset(dataset)))
    assert (rows[writer.pk].pairs_written, rows[writer.pk].written_gold_differs) == (2, 1)
    assert rows[writer.pk].written_gold_differs_share == 0.5
    assert (rows[validator.pk].catch_seen, rows[validator.pk].catch_matched) == (4, 3)
    assert rows[validator.pk].catch_accuracy == 0.75


def guesser_corpus(make_worker, pairs=36):
    """Three honest validators who agree with the author, and one who answers wrongly in turn."""
    dataset = make_dataset()
    honest = [make_worker() for _ in range(3)]
    guesser = make_worker()
    for number in range(pairs):
        truth = LABELS[number % 3]
        wrong = LABELS[(number + 1 + number // 3) % 3]
        wrong = wrong if wrong != truth else LABELS[(number + 2) % 3]
        pair = make_pair(dataset, label=truth)
        for worker in honest:
            add_label(pair, truth, worker=worker, seconds=12.0)
        add_label(pair, wrong, worker=guesser, seconds=1.0)
    return dataset, honest, guesser


def test_a_guesser_is_flagged_with_reasons_and_figures_and_honest_workers_are_not(make_worker):
    dataset, honest, guesser = guesser_corpus(make_worker)
    rows = by_worker(worker_quality(Scope.of_dataset(dataset)))
    kinds = {flag.kind for flag in rows[guesser.pk].flags}
    assert flag_rules.RANDOM_GUESSER in kinds and flag_rules.TOO_FAST in kinds
    guess = next(flag for flag in rows[guesser.pk].flags if flag.kind == flag_rules.RANDOM_GUESSER)
    assert "0/36" in guess.reason and guess.figures["loo_items"] == 36
    for worker in honest:
        assert rows[worker.pk].flags == []
        assert rows[worker.pk].loo_agreement == 1.0
    # Listed first: flagged workers lead the page.
    assert worker_quality(Scope.of_dataset(dataset))[0].worker.pk == guesser.pk


def test_same_label_habit_is_flagged(make_worker):
    dataset = make_dataset()
    lazy = make_worker()
    helpers = [make_worker() for _ in range(3)]
    for number in range(24):
        pair = make_pair(dataset, label=LABELS[number % 3])
        add_label(pair, E, worker=lazy)
        for worker in helpers:
            add_label(pair, LABELS[number % 3], worker=worker)
    row = by_worker(worker_quality(Scope.of_dataset(dataset)))[lazy.pk]
    assert [flag.kind for flag in row.flags if flag.kind == flag_rules.SAME_LABEL] == [flag_rules.SAME_LABEL]


def test_nothing_is_excluded_automatically_unless_a_study_opts_in(make_worker):
    from crowd.models import Study, StudySession, TaskKind

    dataset, honest, guesser = guesser_corpus(make_worker)
    study = Study.objects.create(
        slug="s", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="X"
    )
    for worker in [*honest, guesser]:
        StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{worker.pk}")
    assert auto_exclude_flagged() == []
    assert not Worker.objects.filter(exclusions__isnull=False).distinct().exists()
    study.auto_exclude_flagged = True
    study.save()
    (outcome,) = auto_exclude_flagged()
    assert outcome.changed == 1
    assert list(Worker.objects.filter(exclusions__isnull=False).distinct().values_list("pk", flat=True)) == [guesser.pk]
    # The guesser's labels left gold: every pair is one label short and back in the pool.
    assert set(Pair.objects.values_list("label_count", flat=True)) == {4}


def test_the_scheduled_task_excludes_flagged_workers_only_of_studies_that_opted_in(make_worker):
    from crowd.models import Study, StudySession, TaskKind
    from quality.tasks import auto_exclude_flagged as scheduled

    dataset, honest, guesser = guesser_corpus(make_worker)
    study = Study.objects.create(
        slug="s", name="s", dataset=dataset, task_kind=TaskKind.VALIDATION, completion_code="X"
    )
    for worker in [*honest, guesser]:
        StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{worker.pk}")
    assert scheduled.apply().get() == 0 and not Worker.objects.filter(exclusions__isnull=False).distinct().exists()
    Study.objects.filter(pk=study.pk).update(auto_exclude_flagged=True)
    assert scheduled.apply().get() == 1
    assert list(Worker.objects.filter(exclusions__isnull=False).distinct().values_list("pk", flat=True)) == [guesser.pk]


def test_the_command_lists_flags_and_excludes_only_where_a_study_opted_in(make_worker):
    from io import StringIO

    from django.core.management import call_command

    from crowd.models import Study, StudySession, TaskKind

    dataset, _honest, guesser = guesser_corpus(make_worker)
    out = StringIO()
    call_command("worker_flags", "--auto-exclude", stdout=out)
    text = out.getvalue()
    assert "1 flagged" in text and "random_guesser: agreement with leave-one-out gold 0/36" in text
    assert "Nobody excluded" in text and not Worker.objects.filter(exclusions__isnull=False).distinct().exists()
    study = Study.objects.create(
        slug="opt",
        name="opt",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        completion_code="X",
        auto_exclude_flagged=True,
    )
    StudySession.objects.create(study=study, worker=guesser, external_session_id="g")
    call_command("worker_flags", "--auto-exclude", stdout=StringIO())
    assert list(Worker.objects.filter(exclusions__isnull=False).distinct()) == [guesser]
