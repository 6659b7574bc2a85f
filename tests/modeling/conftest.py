"""A small MultiNLI-like corpus built with the ORM, for the export and API tests."""

import itertools

import pytest

from corpus.models import NO_GOLD, Dataset, Label, Pair, Premise, Split
from corpus.services import add_labels, create_pairs
from tests import factories

L = Label


family, genre = factories.family, factories.genre
_ids = itertools.count(1)


def add_pair(dataset, premise, hypothesis, labels, pair_id=None, needs_validation=None, parse=""):
    """A pair whose labels (author's first) are label rows 1..n, stored as an import stores them."""
    (pair,) = create_pairs(
        dataset,
        premise.split,
        [
            Pair(
                premise=premise,
                pair_id=pair_id or f"{premise.prompt_id}-{next(_ids)}",
                hypothesis=hypothesis,
                parse=parse,
                author_label=labels[0],
            )
        ],
        [list(labels)],
    )
    Pair.objects.filter(pk=pair.pk).update(
        needs_validation=len(labels) > 1 if needs_validation is None else needs_validation
    )
    pair.refresh_from_db()
    return pair


def add_premise(dataset, genre_, split, text, prompt_id=None):
    return Premise.objects.create(
        dataset=dataset, genre=genre_, split=split, text=text, prompt_id=prompt_id or f"p{next(_ids)}"
    )


def validated_dev_pairs(slug, count, worker):
    """Dataset `slug` with `count` dev pairs of one fiction premise each, the author's label and one
    validator's (`worker`) each: the few rows a plan test reads."""
    dataset = Dataset.objects.create(slug=slug, name=slug.capitalize())
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"Premise {i}."), f"Hypothesis {i}.", [L.ENTAILMENT])
        for i in range(count)
    ]
    add_labels([(pair, L.NEUTRAL) for pair in pairs], worker=worker, seconds=3.0)
    return dataset, pairs


FIVE_E = [L.ENTAILMENT] * 4 + [L.NEUTRAL]
SPLIT_VOTE = [L.ENTAILMENT, L.NEUTRAL, L.CONTRADICTION, L.NEUTRAL, L.ENTAILMENT]  # no gold
FIVE_C = [L.CONTRADICTION, L.CONTRADICTION, L.NEUTRAL, L.CONTRADICTION, L.CONTRADICTION]


@pytest.fixture
def small_corpus(db):
    """Dataset 'mini' (fiction: training genre, letters: held out) and 'captions-only' (training genre only).

    mini: train 3 pairs (1 unvalidated), dev 2 fiction + 2 letters, test 1 fiction + 1 letters.
    captions-only: dev 2 pairs, test 1 pair.
    Sentences hold tabs, newlines, quotes and non-ASCII so the file formats are exercised.
    """
    mini = Dataset.objects.create(slug="mini", name="Mini")
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    captions_ds = Dataset.objects.create(slug="captions-only", name="Captions only", is_imported=True)
    captions = genre("captions")

    p_train = add_premise(mini, fiction, "train", 'He said "stop"\tand\tleft.')
    add_pair(mini, p_train, "He left.", [L.ENTAILMENT], needs_validation=False)
    add_pair(mini, p_train, 'Nobody said "stop".', FIVE_C)
    add_pair(mini, p_train, "He may come back,\nlater.", SPLIT_VOTE)
    p_dev_f = add_premise(mini, fiction, "dev", "A café in Zürich — naïve façade.")
    add_pair(mini, p_dev_f, "There is a café.", FIVE_E)
    add_pair(mini, p_dev_f, "NA", SPLIT_VOTE)
    p_dev_l = add_premise(mini, letters, "dev", "Dear donor,\r\nthank you.")
    add_pair(mini, p_dev_l, "Someone is thanked.", FIVE_E)
    add_pair(mini, p_dev_l, '"quoted" start and end "', FIVE_C)
    p_test_f = add_premise(mini, fiction, "test", "  leading and trailing spaces  ")
    add_pair(mini, p_test_f, "null", FIVE_E)
    p_test_l = add_premise(mini, letters, "test", "Sincerely, the board.")
    add_pair(mini, p_test_l, "", FIVE_C)

    p_cap = add_premise(captions_ds, captions, "dev", "Two dogs run.", prompt_id="123.jpg#0")
    add_pair(captions_ds, p_cap, "Animals run.", FIVE_E, pair_id="123.jpg#0r1e")
    add_pair(captions_ds, p_cap, "Cats sleep.", FIVE_C, pair_id="123.jpg#0r1c")
    p_cap_t = add_premise(captions_ds, captions, "test", "A man sings.", prompt_id="124.jpg#1")
    add_pair(captions_ds, p_cap_t, "A person sings.", [L.ENTAILMENT] * 4, pair_id="124.jpg#1r1e")
    return {"mini": mini, "captions": captions_ds, "no_gold": NO_GOLD}
