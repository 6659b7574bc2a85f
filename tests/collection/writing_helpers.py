"""Data for the writing-task tests. get_or_create, so the genres data migration can land beside it."""

from corpus.models import Dataset, Genre, Premise, PromptExample, PromptFamily
from crowd.models import Study

FAMILY_WORDING = {
    "entailment_prompt": "Write a sentence that is definitely correct about the line.",
    "neutral_prompt": "Write a sentence that might be correct about the line.",
    "contradiction_prompt": "Write a sentence that is definitely incorrect about the line.",
}


def writing_setup(slug="test-collection", writings_per_premise=1, train_validation_fraction=0.0):
    family, _ = PromptFamily.objects.get_or_create(
        slug="test-fiction",
        defaults={"name": "Test fiction", "instructions": "Read the line.\n\nWrite three sentences.", **FAMILY_WORDING},
    )
    for label, hypothesis in [
        ("entailment", "A man is outside."),
        ("neutral", "A man waits for a bus."),
        ("contradiction", "Nobody is outside."),
    ]:
        PromptExample.objects.get_or_create(
            family=family, label=label, defaults={"premise": "A man stands in the rain.", "hypothesis": hypothesis}
        )
    genre, _ = Genre.objects.get_or_create(
        slug="test-fiction", defaults={"name": "Test fiction", "is_training": True, "family": family}
    )
    dataset, _ = Dataset.objects.get_or_create(
        slug=slug,
        defaults={
            "name": "Test collection",
            "writings_per_premise": writings_per_premise,
            "train_validation_fraction": train_validation_fraction,
        },
    )
    return dataset, genre


def add_premises(dataset, genre, count, split="train", start=0, **fields):
    return [
        Premise.objects.create(
            dataset=dataset,
            genre=genre,
            prompt_id=f"{start + i}",
            split=split,
            text=f"Premise number {start + i} says the boat left the harbour at dawn.",
            **fields,
        )
        for i in range(count)
    ]


def make_study(dataset, slug="study-one", tasks_per_batch=1, **fields):
    return Study.objects.create(
        slug=slug,
        name=f"Study {slug}",
        dataset=dataset,
        tasks_per_batch=tasks_per_batch,
        completion_code=fields.pop("completion_code", "C0DE1234"),
        **fields,
    )
