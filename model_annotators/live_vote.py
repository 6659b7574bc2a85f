"""The model's vote, live (the plain rule is model_annotators.vote): when validation labels are
added, in the submit's transaction, a pair on the decided rule whose gold is not settled stops once
two human labels agree with the study's vote model, if its calibration passes the study's
threshold (`vote_standing`). Its gold becomes the model's label through an adjudication of source
`model_vote`: kept as history, withdrawable, counted as adjudicated. Off unless a study names a
vote model; a study on the fixed rule (dev and test by default) never stops early.
"""

from typing import Any

from django.core.cache import cache

from corpus.adjudication import adjudicate
from corpus.labels import LABELS_PER_PAIR, NO_GOLD
from corpus.models import AdjudicationSource, Pair, StoppingRule
from corpus.stopping_policies import stop_pairs

from .models import ModelLabel, ModelUse, Outcome
from .scope import asked_with
from .vote import HUMANS_WITH_MODEL, vote_standing

VOTES = {"entailment": "entailment_votes", "neutral": "neutral_votes", "contradiction": "contradiction_votes"}


# Whether any study has a vote model, kept in the cache: the vote is off almost everywhere, and a
# submit should not pay a statement to learn it (tests/validation/test_batch_labels.py counts
# them). A saved or deleted ModelUse forgets it at once (ModelAnnotatorsConfig.ready); anything
# else that could change it (an annotator deleted under a use) within VOTES_ON_SECONDS.
VOTES_ON_KEY = "model-annotators:votes-on"
VOTES_ON_SECONDS = 60


def votes_on() -> bool:
    on = cache.get(VOTES_ON_KEY)
    if on is None:
        on = ModelUse.objects.filter(vote_annotator__isnull=False).exists()
        cache.set(VOTES_ON_KEY, on, VOTES_ON_SECONDS)
    return bool(on)


def forget_votes_on(**kwargs: Any) -> None:
    cache.delete(VOTES_ON_KEY)


def stop_pairs_the_model_decides(sender: Any = None, pair_ids: list[int] | None = None, **kwargs: Any) -> int:
    """The receiver (connected in ModelAnnotatorsConfig.ready); how many pairs the vote stopped."""
    if not pair_ids or not votes_on():
        return 0
    # One statement on every submit (the vote is off almost everywhere): the uses with a vote model
    # whose study collects a dataset of these pairs.
    uses = (
        ModelUse.objects.filter(
            vote_annotator__isnull=False,
            study__dataset_id__in=Pair.objects.filter(pk__in=pair_ids).values("dataset_id"),
        )
        .select_related("vote_annotator__dataset", "study")
        .order_by("pk")
    )
    stopped = 0
    for use in uses:
        standing = vote_standing(use)
        if not standing.allowed:
            continue
        annotator = use.vote_annotator
        assert annotator is not None
        prompt = asked_with(annotator)
        model_labels = dict(
            ModelLabel.objects.filter(
                annotator=annotator, asked_with=prompt, outcome=Outcome.LABELLED, pair_id__in=pair_ids
            ).values_list("pair_id", "label")
        )
        candidates = Pair.objects.filter(
            pk__in=list(model_labels),
            dataset_id=use.study.dataset_id,
            stopping_rule=StoppingRule.DECIDED,
            needs_validation=True,
            stopped_early=False,
            label_count__lt=LABELS_PER_PAIR,
            gold_label=NO_GOLD,
            adjudicated_label="",
        )
        for pair in candidates:
            label = model_labels[pair.pk]
            if getattr(pair, VOTES[label]) < HUMANS_WITH_MODEL:
                continue
            if stop_pairs(Pair.objects.filter(pk=pair.pk)):
                adjudicate(
                    pair,
                    label,
                    source=AdjudicationSource.MODEL_VOTE,
                    reason=f"2 humans + model {annotator.name}",
                    note=f"model annotator {annotator.pk}, asked with {prompt}; {standing.why}",
                )
                stopped += 1
    return stopped
