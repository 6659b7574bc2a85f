"""How often a validation batch can be filled with one pair per premise.

    DATABASE_URL=postgres://... .venv/bin/python bench/batch_fill.py --existing          # the data there (demo)
    DATABASE_URL=postgres://... .venv/bin/python bench/batch_fill.py --premises 3000      # a generated queue

Validators (a pool of `--workers`, in turn) claim batches and submit random labels, as many as
`--batches` or until no one gets work. Every batch shorter than five is checked against the queue:
had the claimant five or more claimable pairs (of any premise, the old rule), it counts as "short
for the rule". Prints the batches, their sizes and that count. Runs in a transaction rolled back at
the end: the database is left as it was.
"""

import argparse
import os
import random
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
os.environ.setdefault("SECRET_KEY", "bench-batch-fill-" + "x" * 40)


class Rollback(Exception):
    pass


def generated_queue(premises: int) -> None:
    """`premises` premises of three pairs (E, N, C, as the writing task saves them), dev split."""
    from corpus.models import Dataset, Genre, Pair, Premise, PromptFamily, Split
    from corpus.services import create_pairs

    family, _ = PromptFamily.objects.get_or_create(slug="fill-family", defaults={"name": "Fill"})
    genre, _ = Genre.objects.get_or_create(
        slug="fill-fiction", defaults={"name": "Fill", "family": family, "is_training": True}
    )
    dataset = Dataset.objects.create(slug=f"fill-{time.time_ns()}", name="Fill")
    made = Premise.objects.bulk_create(
        Premise(
            dataset=dataset, genre=genre, split=Split.DEV, prompt_id=f"fill-{n}", text=f"Premise {n} of the fill queue."
        )
        for n in range(premises)
    )
    labels = ("entailment", "neutral", "contradiction")
    pairs = [
        Pair(
            premise=premise,
            pair_id=f"{premise.prompt_id}{label[0]}",
            hypothesis=f"Hypothesis {label} {premise.pk}.",
            author_label=label,
        )
        for premise in made
        for label in labels
    ]
    create_pairs(dataset, Split.DEV, pairs, [[pair.author_label] for pair in pairs], needs_validation=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--existing", action="store_true", help="the pairs already in the database")
    source.add_argument("--premises", type=int, help="generate a queue of this many premises")
    parser.add_argument("--workers", type=int, default=40)
    parser.add_argument("--batches", type=int, default=100_000)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.db import transaction
    from django.utils import timezone

    from corpus.models import Pair, Worker
    from validation import batch_claims, selectors, services
    from validation.forms import SCHEME_CHOICES, scheme_of
    from validation.models import ValidationClaim

    rng = random.Random(0)
    sizes: Counter[int] = Counter()
    short_for_rule = 0
    started = time.monotonic()
    try:
        with transaction.atomic():
            if args.premises:
                generated_queue(args.premises)
            queued = Pair.objects.filter(needs_validation=True).count()
            workers = [
                Worker.objects.create(user=User.objects.create(username=f"fill-{time.time_ns()}-{n}"))
                for n in range(args.workers)
            ]
            idle = turn = 0
            while sum(sizes.values()) < args.batches and idle < len(workers):
                worker = workers[turn % len(workers)]
                turn += 1
                batch = batch_claims.claim_validation_batch(worker)
                if batch is None:
                    idle += 1
                    continue
                idle = 0
                claims = list(ValidationClaim.objects.filter(batch=batch).select_related("pair__dataset"))
                sizes[len(claims)] += 1
                if len(claims) < selectors.BATCH_SIZE:
                    left = len(selectors.claimable_pairs(worker, timezone.now(), limit=selectors.BATCH_SIZE))
                    short_for_rule += len(claims) + left >= selectors.BATCH_SIZE
                answers = {claim.pair_id: rng.choice(SCHEME_CHOICES[scheme_of(claim.pair)][0])[0] for claim in claims}
                services.submit_validation_batch(worker, batch, answers)
            raise Rollback
    except Rollback:
        pass
    batches = sum(sizes.values())
    print(f"queue: {queued} pairs needing validation; {args.workers} validators; {time.monotonic() - started:.0f} s")
    print(f"batches: {batches}; sizes: {dict(sorted(sizes.items()))}")
    print(
        f"short for the one-per-premise rule (the old rule had 5 to give): {short_for_rule} "
        f"({short_for_rule / batches:.2%} of batches)"
        if batches
        else "no batch"
    )


if __name__ == "__main__":
    main()
