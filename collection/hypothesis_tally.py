"""Hypotheses written per study × dataset × split × genre, maintained for the cost page.

The cost page counts "hypotheses" as a submitted writing claim's pairs by its own worker, in a
study session; counted at read time, that joins every pair of the corpus to its premise's claims.
Here it is kept as append-only signed deltas (`HypothesisTally`, the core's `Tally` pattern: writers
only INSERT, so they never wait on a shared row), written in the writer's transaction:

  - the writing submit (`collection.services.submit_hypotheses`): three pairs a submit;
  - the adversarial task's finish (`adversarial.services._finish`): one pair or none;
  - split assignment (`corpus.signals.pairs_moving_split`): a premise's pairs move to their new split;
  - a pair or premise deleted on its own: its pairs leave (`pair_deleting`). A dataset's or a
    study's deletion takes its tally rows with it (CASCADE).

A read is the SUM of `n` per key (`counts`). Anything else that changes what is counted (a study
session deleted; a bulk load around the writers, e.g. bench/run.py's COPY) is repaired by
`manage.py rebuild_tallies hypothesis`, which compares the deltas with a fresh count.
"""

from collections import Counter
from collections.abc import Mapping
from typing import Any

from django.db.models import Count, F, QuerySet

from corpus import signals, tallies
from corpus.models import Dataset, Pair, Premise
from corpus.scope import Scope
from crowd.models import ClaimStatus, StudySession

from .models import HypothesisTally, WritingClaim

KEY = ("study_id", "dataset_id", "split", "genre_id")

Key = tuple[Any, ...]


def _insert(deltas: Mapping[Key, int]) -> int:
    return tallies.insert_deltas(HypothesisTally, KEY, deltas)


def written(study_session: StudySession | None, premise: Premise, pairs: int) -> int:
    """Count `pairs` hypotheses written on `premise` in `study_session` (none outside a study):
    one INSERT in the caller's transaction."""
    if study_session is None or not pairs:
        return 0
    return _insert({(study_session.study_id, premise.dataset_id, premise.split, premise.genre_id): pairs})


# --- the fresh count (what the cost page used to run) -----------------------------------------


def _written_pairs() -> QuerySet[Pair]:
    """Pairs written in a study: a submitted writing claim on their premise, by their author, in a session."""
    return Pair.objects.filter(
        premise__writing_claims__status=ClaimStatus.SUBMITTED,
        premise__writing_claims__study_session__isnull=False,
        premise__writing_claims__worker=F("author"),
    )


def fresh_counts(dataset: Dataset | None = None, among: QuerySet[Pair] | None = None) -> dict[Key, int]:
    """{KEY: hypotheses} counted from the pairs (of a dataset, among some) and claims (one grouped statement)."""
    pairs = _written_pairs()
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    if among is not None:
        pairs = pairs.filter(pk__in=among.values("pk"))
    rows = (
        pairs.values_list(
            "premise__writing_claims__study_session__study_id", "dataset_id", "premise__split", "premise__genre_id"
        )
        .annotate(n=Count("id"))
        .order_by()
    )
    return {tuple(row[:-1]): row[-1] for row in rows}


def counts(dataset: Dataset | None = None) -> dict[Key, int]:
    """{KEY: hypotheses} from the maintained deltas (one grouped statement over a few rows)."""
    return {
        row[:-1]: row[-1] for row in tallies.summed(tallies.scoped(HypothesisTally, Scope.of_dataset(dataset)), KEY)
    }


# --- writers other than the submits ------------------------------------------------------------


def pairs_moving_split(sender: Any, pairs: QuerySet[Pair], split: str, **kwargs: Any) -> int:
    """Premises move to `split` with these pairs (read before the update; corpus.signals): their
    hypotheses move with them, in the mover's transaction. One grouped read and one INSERT."""
    return _insert(tallies.split_moved(fresh_counts(among=pairs), split, at=KEY.index("split")))


def _deletes_pairs_alone(origin: Any) -> bool:
    """A delete started from pairs or premises (the admin's), not from a dataset or a study,
    whose deletion removes their tally rows by CASCADE."""
    model = origin.model if isinstance(origin, QuerySet) else type(origin)
    return model in (Pair, Premise)


def pair_deleting(sender: type[Pair], instance: Pair, origin: Any = None, **kwargs: Any) -> None:
    """pre_delete receiver: a written pair deleted on its own, or with its premise, leaves the count.
    Runs before any row of the delete is gone (the writing claim is still there to name the study)."""
    if instance.author_id is None or not _deletes_pairs_alone(origin):
        return
    studies = WritingClaim.objects.filter(
        premise_id=instance.premise_id,
        worker_id=instance.author_id,
        status=ClaimStatus.SUBMITTED,
        study_session__isnull=False,
    ).values_list("study_session__study_id", "premise__dataset_id", "premise__split", "premise__genre_id")
    deltas: Counter[Key] = Counter()
    for key in studies:
        deltas[key] -= 1
    _insert(deltas)


# Folded, checked and rebuilt with the corpus's tallies (registered in collection.apps).
TALLY = tallies.Maintained(
    "hypothesis",
    ((HypothesisTally, KEY),),
    lambda dataset: {HypothesisTally: fresh_counts(dataset)},
    "the pairs and writing claims",
    receivers=((signals.pairs_moving_split, pairs_moving_split),),
)
