"""Small builders for validation tests: a dataset, premises and written pairs as the writing task makes them."""
import itertools

from collection.models import Dataset, Genre, Label, Pair, Premise, PromptFamily, Split
from validation.models import ValidationLabel

_numbers = itertools.count(1)


def make_dataset(slug="collected"):
    family, _ = PromptFamily.objects.get_or_create(
        slug="fiction",
        defaults={
            "name": "Fiction",
            "instructions": "Write three sentences.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(slug="fiction", defaults={"name": "Fiction", "is_training": True, "family": family})
    dataset, _ = Dataset.objects.get_or_create(slug=slug, defaults={"name": slug})
    return dataset


def make_pair(dataset, author=None, label=Label.ENTAILMENT, split=Split.DEV, needs_validation=True, premise=None):
    """A written pair: the author's label is label 1 and counts as one vote (as the writing task saves it)."""
    number = next(_numbers)
    genre = Genre.objects.get(slug="fiction")
    if premise is None:
        premise = Premise.objects.create(
            dataset=dataset, genre=genre, prompt_id=f"p{number}", text=f"A person number {number} walks a dog.", split=split
        )
    label = Label(label).value
    pair = Pair.objects.create(
        dataset=dataset, premise=premise, pair_id=f"{premise.prompt_id}-{number}{label[0]}",
        hypothesis=f"Someone walks an animal ({number}).", author_label=label, author=author,
        needs_validation=needs_validation, label_count=1, **{f"{label}_votes": 1},
    )
    ValidationLabel.objects.create(pair=pair, worker=author, position=1, label=label)
    return pair
