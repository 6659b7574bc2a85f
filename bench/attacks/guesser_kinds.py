"""Random clickers in the task kinds beside validation: MPE judgments, recast (two-way) validation
and adversarial verification. Do they earn completion codes in studies that hold the codes of
sessions at chance (`Study.hold_code_at_chance`)?

    DATABASE_URL=postgres://... .venv/bin/python bench/attacks/run.py --base-url http://127.0.0.1:8830 --only guesser_kinds

The judge (Django against the server's database) builds, per run, three studies with the hold on:
- MPE: 240 multi-premise items built from captions (no written label), two earlier judges on each
  (a collection in progress), 4 batches of 5 a visit;
- recast: 300 two-way pairs, three in four "not-entailed" as DNC's recast sets lean, 6 batches a visit;
- adversarial verification: 240 fooled-example pairs (the writer's target label written on each,
  queued for verification through the validation task), 4 batches a visit.
Per kind 24 participants (items enough for all: 20-30 answers each) arrive by the study link and
answer every item at random (on recast, half toss a coin and half always answer "not-entailed":
75% agreement, all of it habit). A
participant "succeeds" when the page after the last batch shows a completion code. Grammaticality
pages give no code (a validation study offers them beside its batches); their judgments feed the
same evidence (tests/quality/test_guessers_every_kind.py).
"""

import random
import time

from bench.attacks._participant import LABELS, Participant, django_ready, wilson

NAME = "guesser_kinds"
CLAIM = "Random clickers in MPE, recast two-way and adversarial verification studies earn completion codes."
CLICKERS = 24


def _setup(nonce: str) -> dict:
    from corpus.models import Dataset, Genre, ItemKind, LabelScheme, Pair, Premise, PromptFamily, Split, Worker
    from corpus.services import add_labels, create_pairs
    from crowd.models import Study, TaskKind

    family, _ = PromptFamily.objects.get_or_create(
        slug="attack-family",
        defaults={
            "name": "Attack family",
            "instructions": "Write.",
            "entailment_prompt": "Definitely correct",
            "neutral_prompt": "Might be correct",
            "contradiction_prompt": "Definitely incorrect",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug="attack-genre", defaults={"name": "Attack", "family": family, "is_training": True}
    )
    rng = random.Random(nonce)

    def worker(name):
        from django.contrib.auth.models import User

        return Worker.objects.create(user=User.objects.create(username=name), market="local")

    def study(dataset, kind, batches):
        return Study.objects.create(
            slug=f"{dataset.slug}-study",
            name=dataset.slug,
            dataset=dataset,
            task_kind=kind,
            tasks_per_batch=batches,
            completion_code=f"CODE{dataset.pk}X",
            catch_trial_share=0,
            hold_code_at_chance=True,
        )

    # MPE: built items (no author label), two earlier judges who agree with the truth.
    mpe = Dataset.objects.create(slug=f"atk-mpe-{nonce}", name="attack mpe", item_kind=ItemKind.MULTI_PREMISE)
    captions = ["A man rides a bike.", "A cyclist on a road.", "Someone pedals uphill.", "A person on wheels."]
    scene = Premise.objects.create(
        dataset=mpe,
        genre=genre,
        prompt_id=f"{nonce}-scene",
        split=Split.DEV,
        text=" ".join(captions),
        sentences=[{"text": text, "source": f"1.jpg#{n}"} for n, text in enumerate(captions)],
    )
    items = Pair.objects.bulk_create(
        Pair(
            dataset=mpe,
            premise=scene,
            pair_id=f"{nonce}-mpe-{n}",
            hypothesis=f"A person moves in way {n}.",
            author_label="",
            needs_validation=True,
        )
        for n in range(240)
    )
    truth = {item.pk: rng.choice(LABELS) for item in items}
    for n in range(2):
        earlier = worker(f"{nonce}-earlier-{n}")
        add_labels([(item, truth[item.pk]) for item in items], worker=earlier)

    def pairs_of(slug, scheme, count, label_of):
        dataset = Dataset.objects.create(slug=slug, name=slug, label_scheme=scheme)
        writer = worker(f"{slug}-writer")
        labels = [label_of(n) for n in range(count)]
        pairs = []
        for n, label in enumerate(labels):  # one pair a premise: a writer gives a premise one pair a label
            premise = Premise.objects.create(
                dataset=dataset, genre=genre, prompt_id=f"{slug}-p{n}", split=Split.DEV, text=f"A man rides bike {n}."
            )
            pairs.append(
                Pair(
                    premise=premise,
                    pair_id=f"{slug}-{n}",
                    hypothesis=f"A person rides thing {n}.",
                    author_label=label,
                    author=writer,
                )
            )
        create_pairs(dataset, Split.DEV, pairs, [[label] for label in labels], needs_validation=True)
        return dataset

    recast = pairs_of(
        f"atk-recast-{nonce}", LabelScheme.TWO_WAY, 300, lambda n: "entailment" if n % 4 == 0 else "neutral"
    )
    verification = pairs_of(f"atk-verify-{nonce}", LabelScheme.THREE_WAY, 240, lambda n: rng.choice(LABELS))
    return {
        "mpe": (study(mpe, TaskKind.MPE_JUDGMENT, 4), "/validate/mpe/next/"),
        "recast": (study(recast, TaskKind.VALIDATION, 6), "/validate/next/"),
        "verification": (study(verification, TaskKind.VALIDATION, 4), "/validate/next/"),
    }


def run(base_url: str, *, seed: int = 0) -> dict:
    django_ready()
    nonce = f"{seed}-{time.time_ns() % 10**9}"
    studies = _setup(nonce)
    rng = random.Random(seed)
    per_kind, tries, codes = {}, 0, 0
    for kind, (study, next_path) in studies.items():
        earned = 0
        for n in range(CLICKERS):
            participant = Participant(base_url, f"{nonce}-{kind}-{n}")
            participant.arrive(study.slug)
            if kind == "recast" and n % 2:
                choose = lambda values: "not-entailed" if "not-entailed" in values else values[-1]  # noqa: E731
            else:
                choose = rng.choice
            page = participant.answer_batches(next_path, study.tasks_per_batch, choose)
            earned += study.completion_code in page
        from crowd.models import StudySession

        held = StudySession.objects.filter(study=study, code_holds__isnull=False).distinct().count()
        per_kind[kind] = f"{earned} of {CLICKERS} codes earned, {held} held"
        tries += CLICKERS
        codes += earned
    share = codes / tries
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": codes,
        "measure": "share of clicker sessions that earned a code",
        "value": round(share, 4),
        "interval": wilson(codes, tries),
        # At most one clicker in 24 keeps a code (the chance test alone let about
        # one in ten through; the quality test, a clicker being far below a study's poor level, holds the rest).
        "at_chance_or_refused": codes <= tries // 24,
        "detail": "; ".join(f"{kind}: {text}" for kind, text in per_kind.items()),
    }
