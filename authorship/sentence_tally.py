"""Written sentences per dataset × writer × study session × copy kind × copy group, maintained for
the workers page's copies figures as append-only signed deltas (`SentenceTally`, the core's
`Tally` pattern), written in the writer's transaction:

  - a writing submit's sentences (`authorship.copies.record_written_sentences`): one INSERT;
  - a sentence deleted with its pair or premise, or on its own: it leaves the count
    (`sentence_deleting`, before the delete). Its copies stay copies; a group's first sentence
    deleted ends the group here and on the sentences alike (SET_NULL on both). A worker's or a
    dataset's deletion takes its rows (CASCADE); a study session's leaves them without a session.

Anything else (a bulk load) is repaired by `manage.py rebuild_tallies sentences`.
"""

from collections import Counter
from collections.abc import Iterable
from typing import Any

from django.db.models import Count, QuerySet

from corpus import tallies
from corpus.models import Dataset, Pair, Premise

from .models import SentenceTally, WrittenSentence

KEY = ("dataset_id", "worker_id", "study_session_id", "copies_other_writer", "cluster_root_id")
Key = tuple[Any, ...]


def _key(sentence: WrittenSentence) -> Key:
    return tuple(getattr(sentence, name) for name in KEY)


def recorded(sentences: Iterable[WrittenSentence]) -> int:
    """Count new written sentences: one INSERT in the caller's transaction."""
    return tallies.insert_deltas(SentenceTally, KEY, Counter(_key(sentence) for sentence in sentences))


def fresh_counts(dataset: Dataset | None = None) -> dict[Key, int]:
    """{KEY: sentences} counted from the written sentences (of a dataset, or every one)."""
    rows: QuerySet[WrittenSentence] = WrittenSentence.objects.all()
    if dataset is not None:
        rows = rows.filter(dataset=dataset)
    counted = rows.values_list(*KEY).annotate(n=Count("id")).order_by()
    return {tuple(row[:-1]): row[-1] for row in counted}


def sentence_deleting(
    sender: type[WrittenSentence], instance: WrittenSentence, origin: Any = None, **kwargs: Any
) -> None:
    """pre_delete receiver (connected in authorship.apps): a sentence deleted on its own, or with its
    pair or premise, leaves the count, in the delete's transaction."""
    # Started from sentences, pairs or premises (the admin's, an erasure's), not from a worker or
    # dataset, whose deletion removes their tally rows by CASCADE.
    if tallies.delete_started_from(origin, (WrittenSentence, Pair, Premise)):
        tallies.insert_deltas(SentenceTally, KEY, {_key(instance): -1})


# Folded, checked and rebuilt with the corpus's tallies (registered in authorship.apps).
TALLY = tallies.Maintained(
    "sentences",
    ((SentenceTally, KEY),),
    lambda dataset: {SentenceTally: fresh_counts(dataset)},
    "the written sentences",
)
