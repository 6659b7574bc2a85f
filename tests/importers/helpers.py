"""Small builders for the corpus, recompute and statistics tests."""

import json

from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, ValidationLabel

E, N, C = "entailment", "neutral", "contradiction"


def ensure_genres(*slugs):
    """The genres by slug; the data migration normally creates them, tests make sure."""
    family, _ = PromptFamily.objects.get_or_create(
        slug="test-family",
        defaults={
            "name": "Test family",
            "instructions": "Write.",
            "entailment_prompt": "definitely correct",
            "neutral_prompt": "might be correct",
            "contradiction_prompt": "definitely incorrect",
        },
    )
    return {
        slug: Genre.objects.get_or_create(
            slug=slug, defaults={"name": slug.title(), "is_training": True, "family": family}
        )[0]
        for slug in slugs
    }


def make_dataset(slug="test-corpus"):
    return Dataset.objects.get_or_create(slug=slug, defaults={"name": slug})[0]


def make_labelled_pairs(dataset, label_lists, split="dev", genre="captions", prefix="p"):
    """Pairs whose labels (author's first) are rows of the label table; counters left at zero.

    The counters are set by whoever the test exercises (recompute_gold), not here.
    """
    genre_obj = ensure_genres(genre)[genre]
    premise = Premise.objects.create(
        dataset=dataset,
        genre=genre_obj,
        prompt_id=f"{prefix}-{split}-{genre}",
        text="Two dogs run on a beach.",
        split=split,
    )
    pairs = Pair.objects.bulk_create(
        Pair(
            dataset=dataset,
            premise=premise,
            pair_id=f"{prefix}{i}",
            hypothesis=f"Hypothesis {i}.",
            author_label=labels[0],
        )
        for i, labels in enumerate(label_lists)
    )
    ValidationLabel.objects.bulk_create(
        ValidationLabel(pair=pair, position=position, label=label)
        for pair, labels in zip(pairs, label_lists, strict=False)
        for position, label in enumerate(labels, start=1)
    )
    return pairs


def write_jsonl(path, records):
    """Write records (dicts, or raw strings for malformed lines) one per line."""
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(record if isinstance(record, str) else json.dumps(record))
            handle.write("\n")
    return path


def snli_record(pair_id, labels, caption="1.jpg#0", premise="A man plays a guitar.", hypothesis="A man makes music."):
    return {
        "annotator_labels": labels,
        "captionID": caption,
        "gold_label": "",
        "pairID": pair_id,
        "sentence1": premise,
        "sentence1_binary_parse": "( ( A man ) ( plays ( a guitar ) ) )",
        "sentence1_parse": "(ROOT (S (NP (DT A) (NN man)) (VP (VBZ plays) (NP (DT a) (NN guitar)))))",
        "sentence2": hypothesis,
        "sentence2_binary_parse": "( ( A man ) ( makes music ) )",
        "sentence2_parse": "(ROOT (S (NP (DT A) (NN man)) (VP (VBZ makes) (NP (NN music)))))",
    }
