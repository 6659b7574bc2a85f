"""Small corpora for the dashboard tests, built with the ORM and the validation service."""
import itertools
from datetime import timedelta

from django.utils import timezone

from collection.models import ClaimStatus, Dataset, Genre, Label, Pair, Premise, PromptFamily, WritingClaim
from validation.models import ValidationLabel
from validation.services import add_validation_label

E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
_ids = itertools.count(1)


def family():
    return PromptFamily.objects.get_or_create(
        slug="dash-family",
        defaults=dict(name="Dashboard family", instructions="Write three sentences.",
                      entailment_prompt="Definitely correct", neutral_prompt="Might be correct",
                      contradiction_prompt="Definitely incorrect"),
    )[0]


def genre(slug, is_training=True):
    return Genre.objects.get_or_create(
        slug=slug, defaults=dict(name=slug.title(), is_training=is_training, family=family())
    )[0]


def dataset(slug="dash"):
    return Dataset.objects.get_or_create(slug=slug, defaults={"name": slug.title()})[0]


def premise(ds, genre_, split, text):
    return Premise.objects.create(dataset=ds, genre=genre_, split=split, text=text, prompt_id=f"dp{next(_ids)}")


def pair(ds, premise_, hypothesis, labels, author=None, validators=()):
    """A pair the way writing creates it (author's label = position 1), then labels 2..n through
    validation.services.add_validation_label, so the counters move the real way."""
    author_label = labels[0]
    new = Pair.objects.create(
        dataset=ds, premise=premise_, pair_id=f"dpair{next(_ids)}", hypothesis=hypothesis,
        author_label=author_label, author=author, needs_validation=len(labels) > 1, label_count=1,
        **{f"{author_label}_votes": 1},
    )
    ValidationLabel.objects.create(pair=new, worker=author, position=1, label=author_label)
    for index, label in enumerate(labels[1:]):
        worker = validators[index] if index < len(validators) else None
        add_validation_label(new, label, worker=worker)
    new.refresh_from_db()
    return new


def worker(username, **fields):
    """A worker without a usable password (no slow hashing): tests log them in with force_login."""
    from django.contrib.auth import get_user_model

    from collection.models import Worker

    return Worker.objects.create(user=get_user_model().objects.create_user(username), **fields)


def submitted_claim(worker, premise_, seconds):
    now = timezone.now()
    claim = WritingClaim.objects.create(worker=worker, premise=premise_, status=ClaimStatus.SUBMITTED,
                                        expires_at=now + timedelta(minutes=30), submitted_at=now)
    WritingClaim.objects.filter(pk=claim.pk).update(created_at=now - timedelta(seconds=seconds))
    return claim


def corpus():
    """Two genres (one held out), dev and train, pairs at every stage of validation.

    Returns the dataset; figures are checked against agreement_stats and hand counts in tests.
    """
    ds = dataset()
    fiction, letters = genre("fiction"), genre("letters", is_training=False)
    p1 = premise(ds, fiction, "dev", "The old man walked slowly down the empty road at dawn.")
    p2 = premise(ds, letters, "dev", "Dear friend, thank you for the kind letter.")
    p3 = premise(ds, fiction, "train", "She laughed.")
    pair(ds, p1, "A man walked.", [E, E, E, E, E])
    pair(ds, p1, "The man was tired.", [N, N, E, N, C])
    pair(ds, p1, "The road was full of cars.", [C, C, C, N, C])
    pair(ds, p2, "Someone wrote a letter.", [E, N, C, N, E])        # no gold
    pair(ds, p2, "The friend was thanked.", [E, E, N])             # 3 labels so far
    pair(ds, p3, "She was sad.", [C])                              # unvalidated train pair
    return ds


def worker_corpus():
    """alice writes three pairs; bob, carol, dan and erin validate them; alice and bob have timed writing claims."""
    ds = dataset()
    fiction = genre("fiction")
    alice, bob, carol, dan, erin = (worker(name) for name in ("alice", "bob", "carol", "dan", "erin"))
    texts = [premise(ds, fiction, "dev", f"Premise number {i} is here.") for i in range(4)]
    validators = [bob, carol, dan, erin]
    pair(ds, texts[0], "h1", [E, E, E, N, E], author=alice, validators=validators)
    pair(ds, texts[1], "h2", [N, C, C, C, N], author=alice, validators=validators)
    pair(ds, texts[2], "h3", [C, E, N, C, E], author=alice, validators=validators)
    for claimed, seconds in zip(texts[:3], (30, 90, 60)):
        submitted_claim(alice, claimed, seconds)
    for claimed, seconds in zip(texts[:2], (10, 40)):
        submitted_claim(bob, claimed, seconds)
    return ds, {w.user.username: w for w in (alice, bob, carol, dan, erin)}
