"""Builders shared by the whole suite: prompt families, genres, datasets, premises and pairs.

Pairs are made the way the platform makes them: through `corpus.services` (the author's label at
position 1, counters set from the labels), and further labels through `add_labels` (the one writer
of labels; `add_label` is a batch of one), so a test never writes counters by hand.
"""

import itertools

from corpus.models import Dataset, Genre, Label, Pair, Premise, PromptFamily, Split
from corpus.services import add_label, create_pairs
from corpus.validation_flags import set_validation_flags

_ids = itertools.count(1)


def family(slug="test-family"):
    return PromptFamily.objects.get_or_create(
        slug=slug,
        defaults={
            "name": slug.replace("-", " ").title(),
            "instructions": "Write three sentences.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )[0]


def genre(slug, is_training=True):
    return Genre.objects.get_or_create(
        slug=slug, defaults={"name": slug.title(), "is_training": is_training, "family": family()}
    )[0]


def dataset(slug="collected", **fields):
    return Dataset.objects.get_or_create(slug=slug, defaults={"name": slug.title(), **fields})[0]


def premise(ds, genre_=None, split=Split.DEV, text=None):
    number = next(_ids)
    return Premise.objects.create(
        dataset=ds,
        genre=genre_ or genre("fiction"),
        split=split,
        prompt_id=f"p{number}",
        text=text or f"A person number {number} walks a dog.",
    )


def pair(ds, premise_, labels, hypothesis=None, author=None, validators=(), needs_validation=None):
    """A pair written by `author` with labels[0], then labels[1:] added one by one by `validators`
    (anonymous where there are fewer validators than labels), as validation adds them."""
    number = next(_ids)
    labels = [Label(label).value for label in labels]
    (new,) = create_pairs(
        ds,
        premise_.split,
        [
            Pair(
                premise=premise_,
                pair_id=f"{premise_.prompt_id}-{number}{labels[0][0]}",
                hypothesis=hypothesis or f"Someone walks an animal ({number}).",
                author_label=labels[0],
                author=author,
            )
        ],
        [labels[:1]],
    )
    if needs_validation is not None:
        # The flags' one writer: the pair tally keys them (the cost page's pool sums it).
        set_validation_flags(Pair.objects.filter(pk=new.pk), needs_validation=needs_validation)
    for index, label in enumerate(labels[1:]):
        add_label(new, label, worker=validators[index] if index < len(validators) else None)
    new.refresh_from_db()
    return new


def exclude(workers, excluded=True, *, teams=None):
    """Exclude (or include again) workers, the way a researcher does (`set_workers_excluded`), in
    `teams` (ids; the default team's, where the suite's data lives, unless named). `workers`: a
    Worker, a list of them or a queryset."""
    from corpus.exclusions import set_workers_excluded
    from corpus.models import Worker
    from teams.models import default_team_id

    if isinstance(workers, Worker):
        workers = [workers]
    chosen = workers if hasattr(workers, "values") else Worker.objects.filter(pk__in=[w.pk for w in workers])
    return set_workers_excluded(chosen, excluded, teams=teams or [default_team_id()])
