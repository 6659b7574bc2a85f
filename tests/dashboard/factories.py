"""Small corpora for the dashboard tests, built with the ORM and the validation service."""

from datetime import timedelta

from django.utils import timezone

from collection.models import WritingClaim
from corpus.models import Label
from crowd.models import ClaimStatus
from tests import factories

E, N, C = Label.ENTAILMENT.value, Label.NEUTRAL.value, Label.CONTRADICTION.value
family, genre = factories.family, factories.genre


def dataset(slug="dash"):
    return factories.dataset(slug)


def premise(ds, genre_, split, text):
    return factories.premise(ds, genre_, split, text)


def pair(ds, premise_, hypothesis, labels, author=None, validators=()):
    """A pair the way writing creates it (author's label = position 1), then labels 2..n added
    through corpus.services.add_label, so the counters move the real way."""
    return factories.pair(
        ds,
        premise_,
        labels,
        hypothesis=hypothesis,
        author=author,
        validators=validators,
        needs_validation=len(labels) > 1,
    )


def worker(username, **fields):
    """A worker without a usable password (no slow hashing): tests log them in with force_login."""
    from django.contrib.auth import get_user_model

    from corpus.models import Worker

    return Worker.objects.create(user=get_user_model().objects.create_user(username), **fields)


def submitted_claim(worker, premise_, seconds):
    now = timezone.now()
    claim = WritingClaim.objects.create(
        worker=worker,
        premise=premise_,
        status=ClaimStatus.SUBMITTED,
        expires_at=now + timedelta(minutes=30),
        submitted_at=now,
    )
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
    pair(ds, p2, "Someone wrote a letter.", [E, N, C, N, E])  # no gold
    pair(ds, p2, "The friend was thanked.", [E, E, N])  # 3 labels so far
    pair(ds, p3, "She was sad.", [C])  # unvalidated train pair
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
    for claimed, seconds in zip(texts[:3], (30, 90, 60), strict=False):
        submitted_claim(alice, claimed, seconds)
    for claimed, seconds in zip(texts[:2], (10, 40), strict=False):
        submitted_claim(bob, claimed, seconds)
    return ds, {w.user.username: w for w in (alice, bob, carol, dan, erin)}
