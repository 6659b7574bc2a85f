"""The maintained tag tally (artifacts.tag_tally) and word tally (corpus.tallies.WordTally) equal a
fresh count of the tags and of the hypotheses' words after every kind of writer: the tagging pass
(and a retag), labels one at a time and in a validator's batch, an exclusion's recompute, a
recompute that fixes counters, an adjudication and an import with imported gold. The pages'
figures read from them equal the full computation they replace."""

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import transaction

from artifacts import tag_tally
from artifacts.models import TagTally
from artifacts.selectors import giveaway_words_for, tag_figures
from artifacts.services import run_tagging_job, start_tagging
from corpus import tallies
from corpus.adjudication import adjudicate
from corpus.exclusions import set_workers_excluded
from corpus.models import Label, Pair, Premise, Split, ValidationLabel, Worker
from corpus.recompute import recompute_gold
from corpus.scope import Scope
from corpus.services import add_label, add_labels, create_pairs
from teams.models import default_team_id
from tests import factories

pytestmark = pytest.mark.django_db

E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
HYPOTHESES = [
    "Nobody is sleeping in the old house.",
    "Some people might be walking a dog.",
    "A man is not eating anything.",
    "The woman will probably sing tomorrow.",
    "Two kids are playing outside.",
    "There is a cat on the mat.",
]


def assert_tallies_equal_a_fresh_count(dataset):
    for maintained in (tag_tally.TALLY, tallies.CORPUS):  # the tag tally, and the word tally with the corpus's
        drift = tallies.check_and_rebuild(None, maintained, repair=False)
        assert (drift.keys, drift.examples) == (0, [])
    for split in (None, Split.DEV, Split.TRAIN, Split.TEST):
        assert giveaway_words_for(Scope.of_dataset(dataset, split), min_count=1, top=None) == giveaway_words_for(
            Scope.of_dataset(dataset, split), min_count=1, top=None, recount=True
        )
    # The figure read from the tally is the one read from a tally rebuilt from the tags.
    before = tag_figures(Scope.of_dataset(dataset))
    tallies.check_and_rebuild(None, tag_tally.TALLY)
    assert tag_figures(Scope.of_dataset(dataset)) == before


def written(dataset, genre, split, number, labels):
    premise = factories.premise(dataset, factories.genre(genre), split=split)
    return factories.pair(dataset, premise, labels, hypothesis=HYPOTHESES[number % len(HYPOTHESES)])


def test_the_tallies_follow_tagging_labels_exclusions_fixes_adjudication_and_imports(loaded_tagger, make_worker):
    dataset = factories.dataset("tallied")
    pairs = [
        written(dataset, genre, split, i, labels)
        for i, (genre, split, labels) in enumerate(
            [
                ("fiction", Split.DEV, [E]),
                ("fiction", Split.DEV, [N, N]),
                ("travel", Split.DEV, [C, C, E]),
                ("travel", Split.TRAIN, [E]),
                ("fiction", Split.TRAIN, [N, E, E]),
                ("travel", Split.DEV, [C]),
            ]
        )
    ]
    job = start_tagging(queue=False)
    run_tagging_job(job.pk, tagger=loaded_tagger)
    assert tag_figures(Scope.of_dataset(dataset))["tagged"] == len(pairs)
    assert_tallies_equal_a_fresh_count(dataset)

    # Labels one at a time: counted labels move (an author's label to no gold) and gold arrives.
    validators = [make_worker() for _ in range(2)]
    add_label(pairs[0], E, worker=validators[0])
    add_label(pairs[1], N, worker=validators[0])  # third N with the author's: gold N
    assert_tallies_equal_a_fresh_count(dataset)

    # A validator's batch: gold moves on some pairs, counted labels on others.
    add_labels([(pairs[0], E), (pairs[2], C), (pairs[5], N)], worker=validators[1])
    assert Pair.objects.get(pk=pairs[0].pk).gold_label == E
    assert_tallies_equal_a_fresh_count(dataset)

    # An exclusion: the excluded validator's labels leave the gold labels (recompute_gold's fix).
    outcome = set_workers_excluded(Worker.objects.filter(pk=validators[1].pk), True, teams=[default_team_id()])
    assert outcome.pairs_fixed >= 2
    assert_tallies_equal_a_fresh_count(dataset)

    # Labels changed behind the counters' back, set right by recompute_gold's fix.
    ValidationLabel.objects.filter(pair=pairs[2]).delete()
    assert recompute_gold().fixed == 1
    assert_tallies_equal_a_fresh_count(dataset)

    # An adjudicated gold label.
    adjudicate(pairs[3], C, reason="tallies")
    assert_tallies_equal_a_fresh_count(dataset)

    # An import with imported gold (one label: the file's gold counts), then tagged.
    premise = factories.premise(dataset, factories.genre("travel"), split=Split.TRAIN)
    create_pairs(
        dataset,
        Split.TRAIN,
        [
            Pair(premise=premise, pair_id=f"imp-{i}", hypothesis=HYPOTHESES[i], author_label=E, imported_gold=gold)
            for i, gold in enumerate([C, N, ""])
        ],
        [[E], [E], [E]],
        needs_validation=False,
    )
    assert_tallies_equal_a_fresh_count(dataset)
    run_tagging_job(start_tagging(queue=False).pk, tagger=loaded_tagger)
    assert tag_figures(Scope.of_dataset(dataset))["untagged"] == 0
    assert_tallies_equal_a_fresh_count(dataset)

    # A premise moved to another split with its pair (as collection.splits moves them).
    moving = Premise.objects.filter(pk=pairs[0].premise_id)
    with transaction.atomic():
        tallies.premises_moving(moving, Split.TEST)
        moving.update(split=Split.TEST)
    assert_tallies_equal_a_fresh_count(dataset)

    # A retag replaces every pair's rows.
    run_tagging_job(start_tagging(retag=True, queue=False).pk, tagger=loaded_tagger)
    assert tag_figures(Scope.of_dataset(dataset))["tagged"] == len(pairs) + 3
    assert_tallies_equal_a_fresh_count(dataset)


def test_the_rebuild_command_reports_and_repairs_drift(loaded_tagger, capsys):
    from django.core.management import CommandError, call_command

    from artifacts.models import TagTally

    dataset = factories.dataset("drifting")
    written(dataset, "fiction", Split.DEV, 0, [E, E, E])
    run_tagging_job(start_tagging(queue=False).pk, tagger=loaded_tagger)
    call_command("rebuild_tallies", "tag", "--check")
    TagTally.objects.all().delete()  # a tally that lost its rows (a writer that went around it)
    with pytest.raises(CommandError, match="differs"):
        call_command("rebuild_tallies", "tag", "--check")
    call_command("rebuild_tallies", "tag", "--dataset", "drifting")
    call_command("rebuild_tallies", "tag", "--check")
    assert tag_figures(Scope.of_dataset(dataset))["tagged"] == 1


def test_a_fix_that_moves_more_tagged_pairs_than_one_statement_takes_keeps_the_tally(loaded_tagger):
    """A recompute whose fix moves the gold label of more tagged pairs than one read of their tags
    takes (tag_tally.MOVES_PER_READ; the fix of every pair at MultiNLI scale): the tag tally
    still equals a fresh count. A single statement of them all would take PostgreSQL seconds
    to plan."""
    dataset = factories.dataset("moved-in-bulk")
    premise = factories.premise(dataset, factories.genre("fiction"), split=Split.DEV)
    count = tag_tally.MOVES_PER_READ + 50
    create_pairs(
        dataset,
        Split.DEV,
        [
            Pair(premise=premise, pair_id=f"bulk-{i}", hypothesis=f"{HYPOTHESES[i % 6]} ({i})", author_label=N)
            for i in range(count)
        ],
        [[N]] * count,
        needs_validation=False,
    )
    # Gold labels written around the counters (one author label decides nothing), then tagged
    # under them: the fix moves every pair's tags from "entailment" to no gold.
    Pair.objects.filter(dataset=dataset).update(gold_label=E)
    tallies.check_and_rebuild()  # corpus's tallies count them under it too, as after a COPY
    run_tagging_job(start_tagging(queue=False).pk, tagger=loaded_tagger)
    assert tag_figures(Scope.of_dataset(dataset))["tagged"] == count

    report = recompute_gold()

    assert report.fixed == count
    assert set(Pair.objects.filter(dataset=dataset).values_list("gold_label", flat=True)) == {"-"}
    assert_tallies_equal_a_fresh_count(dataset)


def test_the_rebuild_command_reports_drift_and_rebuilds_the_tally_from_the_tags():
    dataset, genre = factories.dataset("tallied"), factories.genre("fiction")
    TagTally.objects.create(dataset=dataset, split=Split.DEV, genre=genre, gold_label=E, tag="negation", n=2)
    with pytest.raises(CommandError, match="the tag tally differs from the phenomenon tags on 1 keys"):
        call_command("rebuild_tallies", "tag", "--check", stdout=StringIO())
    assert TagTally.objects.count() == 1  # a check changes nothing
    out = StringIO()
    call_command("rebuild_tallies", "tag", "--dataset", dataset.slug, stdout=out)
    assert "drifting from the phenomenon tags: 1 keys, 2 rows" in out.getvalue()
    assert (
        f"TagTally ({dataset.pk}, 'dev', {genre.pk}, 'entailment', 'negation'): maintained 2 truth 0" in out.getvalue()
    )
    assert "rebuilt from the phenomenon tags" in out.getvalue()
    assert not TagTally.objects.exists()
    call_command("rebuild_tallies", "tag", "--check", stdout=StringIO())
