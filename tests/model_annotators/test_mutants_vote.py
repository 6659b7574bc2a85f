"""The model's vote at its edges: when a vote model has earned its vote (the calibration's pairs and
accuracy against the study's thresholds, boundaries included, and why not); the plain rule and its
replay over whole label sequences (the bench's table); and the live receiver: it decides only the
pairs just labelled, with the vote model's own labels of its current prompt, in its study's dataset,
never a pair already decided or adjudicated, one study's or pair's refusal not ending the others',
with the decision's reason and note, the count of pairs it stopped, and the statements it pays."""

import pytest

from corpus.labels import NO_GOLD
from corpus.models import Adjudication, AdjudicationSource, Label, Pair, StoppingRule
from model_annotators import services
from model_annotators.live_vote import forget_votes_on, stop_pairs_the_model_decides, votes_on
from model_annotators.models import Calibration, ModelAnnotator, ModelLabel, ModelUse, Outcome
from model_annotators.vote import HEADER, VoteStanding, replay_vote, replay_with_model, vote_standing, vote_stop
from tests.model_annotators.test_live_vote import voting_setup
from tests.validation.validation_factories import make_dataset, make_pair

E, N, C = Label.ENTAILMENT, Label.NEUTRAL, Label.CONTRADICTION


# --- whether the vote is earned ------------------------------------------------------------------


def calibrated_use(slug: str, *, pairs: int, accuracy: float | None) -> ModelUse:
    _dataset, annotator, study = voting_setup(slug, accuracy=0.5)
    Calibration.objects.filter(annotator=annotator).delete()
    if accuracy is not None or pairs:
        Calibration.objects.create(annotator=annotator, asked_with="validation-v1", pairs=pairs, accuracy=accuracy)
    return ModelUse(study=study, vote_annotator=annotator, vote_min_accuracy=0.95, vote_min_calibration_pairs=200)


@pytest.mark.django_db
def test_a_study_without_a_vote_model_gives_no_vote():
    _dataset, _annotator, study = voting_setup("no-vote-model", accuracy=0.99)
    assert vote_standing(ModelUse(study=study)) == VoteStanding(False, "no model has a vote in this study")


@pytest.mark.django_db
@pytest.mark.parametrize(("pairs", "accuracy"), [(0, None), (500, None)])
def test_a_model_without_a_calibrated_accuracy_gives_no_vote(pairs, accuracy):
    use = calibrated_use(f"uncalibrated-{pairs}", pairs=pairs, accuracy=accuracy)
    assert vote_standing(use) == VoteStanding(False, "the model has not been calibrated")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("pairs", "accuracy", "standing"),
    [
        (199, 0.99, VoteStanding(False, "calibrated on 199 gold pairs, fewer than 200")),
        (200, 0.949, VoteStanding(False, "calibration accuracy 0.949 is below 0.950")),
        # Both thresholds are inclusive: exactly 200 pairs at exactly 0.95 earn the vote.
        (200, 0.95, VoteStanding(True, "calibration accuracy 0.950 on 200 gold pairs")),
        (1000, 0.991, VoteStanding(True, "calibration accuracy 0.991 on 1000 gold pairs")),
    ],
)
def test_the_vote_is_earned_at_the_studys_thresholds_and_says_why_not(pairs, accuracy, standing):
    assert vote_standing(calibrated_use(f"earned-{pairs}-{accuracy}", pairs=pairs, accuracy=accuracy)) == standing


@pytest.mark.django_db
def test_the_latest_calibration_decides_the_vote():
    use = calibrated_use("latest", pairs=500, accuracy=0.99)
    assert use.vote_annotator is not None
    Calibration.objects.create(annotator=use.vote_annotator, asked_with="validation-v1", pairs=500, accuracy=0.9)
    assert vote_standing(use) == VoteStanding(False, "calibration accuracy 0.900 is below 0.950")


# --- the plain rule and its replay ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("humans", "model", "stops"),
    [
        ([E, E], E, True),
        ([E, N, E, C], E, True),
        ([E], E, False),  # one human beside the model is not enough
        ([E, E], N, False),  # the humans agree with each other, not with the model
        ([E, E], None, False),
        ([E, E], "", False),
        ([E, E, N, N, C], E, False),  # five labels: the pair is full, nothing to stop
    ],
)
def test_the_vote_stops_a_pair_before_its_fifth_label_once_two_humans_agree_with_the_model(humans, model, stops):
    assert vote_stop(humans, model) is stops


@pytest.mark.parametrize(
    ("labels", "model", "result"),
    [
        ([E, E, E, N, N], None, (3, E, False)),  # three humans agree: the decided rule stops it
        ([E, E, N, N, N], E, (2, E, True)),  # two humans and the model agree first
        ([E, N, E, N, E], None, (5, E, False)),  # undecided to the end: the five labels' gold
        ([E, N, E, N, E], N, (4, N, True)),
        ([E, N, C, N, C], None, (5, NO_GOLD, False)),
        ([E, N, C], None, (3, NO_GOLD, False)),  # a short sequence is replayed as far as it goes
    ],
)
def test_a_replay_stops_where_the_rule_or_the_vote_would_and_keeps_that_gold(labels, model, result):
    assert replay_with_model(labels, model) == result


def test_the_replay_counts_labels_saved_votes_and_gold_changed_over_full_sequences():
    sequences = [
        [E, E, E, N, N],  # decided at three; the vote stops it at two with the same gold
        [E, N, E, N, E],  # the model (N) stops it at four and changes its gold from E
        [E, E, E, E],  # not five labels: left out, the next ones still counted
        [E, N, C, N, C],  # no gold; the model's C never has two humans before the fifth label
        [E, N, C, C, N],  # no gold of five labels; the vote gives it C at four
        [C, C, C, E, N],  # decided at three; the vote stops it at two
        [E, N, C, E, C],  # no gold of five labels; the vote gives it E at four
        [E, N, E, E, C],  # decided at four; the vote stops it at three
    ]
    replay = replay_vote("m", sequences, [E, N, E, C, C, C, E, E])
    figures = (
        replay.pairs,
        replay.validation_labels,
        replay.saved_human_rule,
        replay.saved_with_vote,
        replay.vote_stops,
        replay.gold_changed,
        replay.gold_given_to_no_gold,
        replay.accuracy,
    )
    # The model is right on three of the four pairs with a gold (E, C, E; not N for E).
    assert figures == (7, 28, 5, 11, 6, 3, 2, 0.75)
    assert replay.row() == "| m | 0.750 | 7 | 5 (17.9%) | 11 (39.3%) | 6 | 1 | 2 |"
    assert replay.row().count("|") == HEADER.splitlines()[0].count("|")


def test_a_replay_without_gold_or_pairs_reports_no_accuracy_and_nothing_saved():
    no_gold = replay_vote("none", [[E, N, C, N, C]], [C])
    assert (no_gold.accuracy, no_gold.row()) == (None, "| none | n/a | 1 | 0 (0.0%) | 0 (0.0%) | 0 | 0 | 0 |")
    assert replay_vote("empty", [], []).row() == "| empty | n/a | 0 | 0 (0.0%) | 0 (0.0%) | 0 | 0 | 0 |"


def test_a_replay_refuses_model_labels_that_do_not_match_the_sequences():
    with pytest.raises(ValueError):
        replay_vote("m", [[E, E, E, N, N]], [E, N])


# --- the live receiver ---------------------------------------------------------------------------


def voting_study(slug: str, *, accuracy: float = 0.97):
    dataset, annotator, study = voting_setup(slug, accuracy=accuracy)
    services.set_model_use(study, vote_annotator=annotator, vote_min_accuracy=0.95)
    return dataset, annotator


def open_pair(dataset, annotator=None, *, humans: str = E, model: str | None = E, **state) -> Pair:
    """A pair on the decided rule with two agreeing human labels, open for more, and (by default)
    the vote model's label from its current prompt."""
    pair = make_pair(dataset, label=humans)
    Pair.objects.filter(pk=pair.pk).update(
        **{
            "stopping_rule": StoppingRule.DECIDED,
            "needs_validation": True,
            "stopped_early": False,
            "label_count": 2,
            f"{humans}_votes": 2,
            "gold_label": NO_GOLD,
            **state,
        }
    )
    if annotator is not None and model is not None:
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with="validation-v1", outcome=Outcome.LABELLED, label=model
        )
    pair.refresh_from_db()
    return pair


def decided_by_vote(*pairs: Pair) -> list[bool]:
    return [
        Adjudication.objects.filter(pair=pair, source=AdjudicationSource.MODEL_VOTE).exists()
        and Pair.objects.get(pk=pair.pk).stopped_early
        for pair in pairs
    ]


@pytest.mark.django_db
def test_the_receiver_stops_each_pair_the_vote_decides_and_says_how_many():
    dataset, annotator = voting_study("counted")
    first, second = open_pair(dataset, annotator), open_pair(dataset, annotator)

    assert stop_pairs_the_model_decides(pair_ids=[first.pk, second.pk]) == 2

    assert decided_by_vote(first, second) == [True, True]
    decision = Adjudication.objects.get(pair=first)
    assert (decision.label, decision.reason) == (E, "2 humans + model voter")
    assert decision.note == (
        f"model annotator {annotator.pk}, asked with validation-v1; calibration accuracy 0.970 on 500 gold pairs"
    )


@pytest.mark.django_db
def test_nothing_is_stopped_without_labelled_pairs_or_without_a_vote_model():
    dataset, annotator, _study = voting_setup("votes-off", accuracy=0.97)
    pair = open_pair(dataset, annotator)
    forget_votes_on()
    assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 0
    assert stop_pairs_the_model_decides(pair_ids=[]) == 0
    assert stop_pairs_the_model_decides(pair_ids=None) == 0
    assert decided_by_vote(pair) == [False]


@pytest.mark.django_db
def test_only_the_pairs_just_labelled_are_decided():
    dataset, annotator = voting_study("just-labelled")
    labelled, other = open_pair(dataset, annotator), open_pair(dataset, annotator)
    assert stop_pairs_the_model_decides(pair_ids=[labelled.pk]) == 1
    assert decided_by_vote(labelled, other) == [True, False]


@pytest.mark.django_db
@pytest.mark.parametrize("whose", ["another model", "an older prompt", "an unparsed answer"])
def test_only_the_vote_models_own_labels_of_its_current_prompt_count(whose):
    dataset, annotator = voting_study(f"own-labels-{whose.replace(' ', '-')}")
    pair = open_pair(dataset, model=None)
    if whose == "another model":
        other = ModelAnnotator.objects.create(
            name="other", dataset=dataset, kind=annotator.kind, base_url=annotator.base_url, model_name="o"
        )
        ModelLabel.objects.create(annotator=other, pair=pair, asked_with="validation-v1", outcome="labelled", label=E)
    elif whose == "an older prompt":
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with="validation-v0", outcome=Outcome.LABELLED, label=E
        )
    else:
        ModelLabel.objects.create(
            annotator=annotator, pair=pair, asked_with="validation-v1", outcome=Outcome.UNPARSEABLE, label=E
        )
    assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 0
    assert decided_by_vote(pair) == [False]


@pytest.mark.django_db
def test_a_studys_vote_decides_only_pairs_of_its_own_dataset():
    dataset, annotator = voting_study("own-dataset")
    own = open_pair(dataset, annotator)
    elsewhere = open_pair(make_dataset("no-vote-here"), annotator)
    assert stop_pairs_the_model_decides(pair_ids=[own.pk, elsewhere.pk]) == 1
    assert decided_by_vote(own, elsewhere) == [True, False]


@pytest.mark.django_db
@pytest.mark.parametrize(
    "state",
    [
        {"gold_label": E, "label_count": 3, "entailment_votes": 3},  # three humans decided it
        {"adjudicated_label": N},  # a researcher decided it
        {"needs_validation": False},
        {"stopped_early": True, "needs_validation": False},
        {"label_count": 5, "entailment_votes": 2, "neutral_votes": 3},
    ],
)
def test_a_pair_already_decided_or_closed_is_left_to_its_decision(state):
    dataset, annotator = voting_study(f"closed-{next(iter(state))}")
    pair = open_pair(dataset, annotator, **state)
    before = Pair.objects.filter(pk=pair.pk).values().get()
    assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 0
    assert not Adjudication.objects.filter(pair=pair).exists()
    assert Pair.objects.filter(pk=pair.pk).values().get() == before


@pytest.mark.django_db
def test_a_study_whose_model_has_not_earned_its_vote_leaves_the_next_studys_vote_alone():
    dataset, unearned = voting_study("unearned-first", accuracy=0.90)
    earned = ModelAnnotator.objects.create(
        name="earned", dataset=dataset, kind=unearned.kind, base_url=unearned.base_url, model_name="e"
    )
    earned.prompts.create(task_kind="validation", version=1, system="s", template="t")
    Calibration.objects.create(annotator=earned, asked_with="validation-v1", pairs=500, accuracy=0.97)
    _other_dataset, _annotator, second_study = voting_setup("unearned-second", accuracy=0.97)
    second_study.dataset = dataset
    second_study.save()
    services.set_model_use(second_study, vote_annotator=earned, vote_min_accuracy=0.95)
    assert list(ModelUse.objects.order_by("pk").values_list("vote_annotator", flat=True)) == [unearned.pk, earned.pk]
    pair = open_pair(dataset, earned)

    assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 1
    assert Adjudication.objects.get(pair=pair).reason == "2 humans + model earned"


@pytest.mark.django_db
def test_a_pair_the_model_disagrees_on_leaves_the_next_pair_to_its_vote():
    dataset, annotator = voting_study("disagreeing-first")
    disagreeing = open_pair(dataset, annotator, model=N)
    agreeing = open_pair(dataset, annotator)
    assert disagreeing.pk < agreeing.pk
    assert stop_pairs_the_model_decides(pair_ids=[disagreeing.pk, agreeing.pk]) == 1
    assert decided_by_vote(disagreeing, agreeing) == [False, True]


@pytest.mark.django_db
def test_the_decisions_reason_fits_its_column_whatever_the_models_name():
    dataset, annotator = voting_study("long-name")
    ModelAnnotator.objects.filter(pk=annotator.pk).update(name="m" * 100)
    pair = open_pair(dataset, annotator)
    assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 1
    assert Adjudication.objects.get(pair=pair).reason == ("2 humans + model " + "m" * 100)[:100]


@pytest.mark.django_db
def test_a_submit_outside_every_voting_dataset_pays_one_statement(django_assert_num_queries):
    _dataset, annotator = voting_study("voting-elsewhere")
    pair = open_pair(make_dataset("submitted-here"), annotator)
    assert votes_on()
    with django_assert_num_queries(1):
        assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 0


@pytest.mark.django_db
def test_an_earned_vote_that_decides_nothing_pays_one_statement_per_step(django_assert_num_queries):
    dataset, annotator = voting_study("decides-nothing")
    pair = open_pair(dataset, annotator, model=N)
    assert votes_on()
    # The study's use with its model and study joined, the calibration, the current prompt, the
    # model's labels, the candidate pairs: the use's model and study are never read again.
    with django_assert_num_queries(5):
        assert stop_pairs_the_model_decides(pair_ids=[pair.pk]) == 0
