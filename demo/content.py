"""Demo data (`python manage.py load_demo`): the demo premises (demo.premises), demo accounts,
studies and written pairs. Everything is keyed by stable ids, so loading twice changes nothing.
"""

import math
import random
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from base.permissions import ensure_researcher_group
from collection.services import create_written_pairs
from corpus.models import THREE_WAY, Dataset, Genre, Label, Market, Pair, Premise, Split, Worker
from corpus.prompt_install import install_prompt_content
from corpus.services import add_labels
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from demo.premises import PREMISES, WRITTEN_PREMISES_PER_GENRE, demo_split, premise_entries, prompt_id
from teams.models import Role
from teams.services import join
from validation import cost_tally
from validation.models import ValidationClaim
from validation.selectors import BATCH_SIZE

RESEARCHER = ("researcher", "researcher-demo")
WORKER = ("worker", "worker-demo")
DEMO_AUTHORS = ["demo-author-1", "demo-author-2", "demo-author-3"]
# A pair's four validation labels need four people besides its author; the other two authors are not enough.
DEMO_VALIDATORS = ["demo-validator-1", "demo-validator-2"]

# As a Prolific study has it; the completion page offers the way back with the session's code.
COMPLETION_URL = "https://app.prolific.com/submissions/complete?cc={code}"
# The demo has no market and its ids are made up: an open link (crowd.arrival.launch_refusal).
OPEN_LINK = {"open_link_unverified": True, "completion_url": COMPLETION_URL}
WRITING_STUDY = {
    "slug": "demo-writing",
    "name": "Demo: write three sentences",
    "task_kind": TaskKind.WRITING,
    "tasks_per_batch": 3,
    "completion_code": "DEMO-WRITE-1234",
    "payment_per_task": Decimal("1.20"),
    **OPEN_LINK,
}
VALIDATION_STUDY = {
    "slug": "demo-validation",
    "name": "Demo: label sentence pairs",
    "task_kind": TaskKind.VALIDATION,
    "tasks_per_batch": 2,
    "completion_code": "DEMO-VALID-5678",
    "payment_per_task": Decimal("0.40"),
    # Signed links (the link load_demo prints carries `sig`): its ids count as verified, so the catch
    # bonuses of the quality demo are payable and the bonus page has something to pay.
    "require_signed_link": True,
    "completion_url": COMPLETION_URL,
}


# --- loading ---------------------------------------------------------------------------------


def ensure_dataset() -> Dataset:
    dataset, _ = Dataset.objects.get_or_create(
        slug=settings.NLI["DEFAULT_DATASET"], defaults={"name": "Collected pairs", "train_validation_fraction": 0.1}
    )
    return dataset


def ensure_user(username: str, password: str | None = None, **flags: Any) -> Any:
    """A user with this name; the password is set only when the user is created (a rerun changes nothing)."""
    User = get_user_model()
    user, created = User.objects.get_or_create(username=username, defaults=flags)
    if created:
        if password:
            user.set_password(password)
        else:
            user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def ensure_worker(username: str, password: str | None = None) -> Worker:
    user = ensure_user(username, password)
    worker, _ = Worker.objects.get_or_create(user=user, defaults={"market": Market.LOCAL})
    return worker


def ensure_accounts() -> tuple[Any, Worker, list[Worker], list[Worker]]:
    researcher = ensure_user(RESEARCHER[0], RESEARCHER[1], is_staff=True)
    researcher.groups.add(ensure_researcher_group())
    join(researcher, role=Role.OWNER)  # the default team: the demo needs no word about teams
    worker = ensure_worker(*WORKER)
    authors = [ensure_worker(name) for name in DEMO_AUTHORS]
    validators = [ensure_worker(name) for name in DEMO_VALIDATORS]
    return researcher, worker, authors, validators


def ensure_study(spec: dict[str, Any], dataset: Dataset) -> Study:
    """The demo study `spec` (Study fields, its slug among them) on `dataset`, created once: a rerun changes nothing."""
    fields = {key: value for key, value in spec.items() if key != "slug"}
    return Study.objects.get_or_create(slug=spec["slug"], defaults={**fields, "dataset": dataset})[0]


def ensure_premises(dataset: Dataset) -> dict[str, list[Premise]]:
    """Create the demo premises that are missing; return {genre slug: [premise, ...]} in demo order."""
    by_genre: dict[str, list[Premise]] = {}
    for genre in Genre.objects.filter(slug__in=PREMISES):
        premises = []
        for index, (text, _) in enumerate(premise_entries(genre.slug)):
            premise, _ = Premise.objects.get_or_create(
                dataset=dataset,
                prompt_id=prompt_id(genre.slug, index + 1),
                defaults={"genre": genre, "text": text, "split": demo_split(genre, index), "source": "demo"},
            )
            premises.append(premise)
        by_genre[genre.slug] = premises
    return by_genre


def write_demo_pairs(premise: Premise, author: Worker, hypotheses: Sequence[str], dataset: Dataset) -> list[Pair]:
    """The author's three pairs for one premise, with their position-1 labels, in one transaction."""
    with transaction.atomic():
        pairs = create_written_pairs(premise, author, dict(zip(THREE_WAY, hypotheses, strict=False)))
        premise.writings_done += 1
        premise.save(update_fields=["writings_done"])
    return pairs


def ensure_demo_pairs(dataset: Dataset, premises_by_genre: dict[str, list[Premise]], authors: list[Worker]) -> int:
    created = 0
    for genre_index, (genre_slug, premises) in enumerate(sorted(premises_by_genre.items())):
        entries = list(premise_entries(genre_slug))
        for index, premise in enumerate(premises[:WRITTEN_PREMISES_PER_GENRE]):
            hypotheses = entries[index][1]
            if hypotheses is None or Pair.objects.filter(dataset=dataset, premise=premise).exists():
                continue
            author = authors[(genre_index + index) % len(authors)]
            created += len(write_demo_pairs(premise, author, hypotheses, dataset))
    return created


# --- validation labels ---------------------------------------------------------------------------

# How many validation labels (positions 2..) each demo pair gets, cycling: some pairs reach five
# labels and a gold label, others stay below so that the demo worker has validation to do.
DEMO_VALIDATION_COUNTS = [4, 3, 4, 2, 0, 4, 1, 3]
DISAGREEMENT_RATE = 0.15


def add_demo_validation_labels(dataset: Dataset) -> int:
    """Give demo dev/test pairs validation labels from demo workers who are not the author: mostly
    agreeing with the author, a seeded draw disagreeing now and then, so some pairs end without gold.
    Pairs that already have validation labels are left alone (a rerun adds nothing). Only the demo
    authors' pairs are counted off: the quality demo's guesser pairs on the same premises would shift
    the cycle on a second `make demo`."""
    pool = list(Worker.objects.filter(user__username__in=DEMO_AUTHORS + DEMO_VALIDATORS).order_by("user__username"))
    pairs = (
        Pair.objects.filter(
            dataset=dataset,
            premise__split__in=[Split.DEV, Split.TEST],
            premise__source="demo",
            author__user__username__in=DEMO_AUTHORS,
        )
        .select_related("premise")
        .order_by("pair_id")
    )
    # Drawn pair by pair, written label place by label place: the k-th labels of every pair go in
    # one batch per validator (a pair's labels keep the order drawn), a few dozen writes, not one
    # per label (each with its counters' and tallies' statements, most of a demo load).
    places: list[dict[int, tuple[Worker, list[tuple[Pair, str]]]]] = []
    claimed_by: dict[int, set[int]] = {}
    for worker_id, pair_id in ValidationClaim.objects.filter(pair__in=pairs).values_list("worker_id", "pair_id"):
        claimed_by.setdefault(pair_id, set()).add(worker_id)
    for index, pair in enumerate(pairs):
        if pair.label_count > 1:
            continue
        rng = random.Random(f"demo-validation-{pair.pair_id}")
        # Never a validator who holds (or held) a claim on the pair: their batch would be refused.
        claimed = claimed_by.get(pair.pk, set())
        validators = [worker for worker in pool if worker.pk != pair.author_id and worker.pk not in claimed]
        rng.shuffle(validators)
        wanted = min(DEMO_VALIDATION_COUNTS[index % len(DEMO_VALIDATION_COUNTS)], len(validators))
        for place, validator in enumerate(validators[:wanted]):
            label = pair.author_label
            if rng.random() < DISAGREEMENT_RATE:
                label = rng.choice([other for other in Label.values if other != pair.author_label])
            if place == len(places):
                places.append({})
            places[place].setdefault(validator.pk, (validator, []))[1].append((pair, label))
    added = 0
    for batches in places:
        for validator, labelled in batches.values():
            with transaction.atomic():
                add_labels(labelled, worker=validator)
                # Each label's submitted claim, as the validation task leaves one: the claim history
                # is then true, and no selector can offer the validator this pair again.
                now = timezone.now()
                ValidationClaim.objects.bulk_create(
                    ValidationClaim(
                        worker=validator, pair=pair, status=ClaimStatus.SUBMITTED, expires_at=now, submitted_at=now
                    )
                    for pair, _ in labelled
                )
            added += len(labelled)
    return added


def ensure_demo_study_sessions(dataset: Dataset) -> int:
    """Count the demo validators' labels as work in the demo validation study, so the cost page has
    figures: one session per validator, the labels' claims attached to it, a task per batch of five
    labels (rounded up). Claims already in a session are left alone (a rerun changes nothing)."""
    study = Study.objects.filter(slug=VALIDATION_STUDY["slug"]).first()
    if study is None:
        return 0
    claims = ValidationClaim.objects.filter(
        pair__dataset=dataset,
        status=ClaimStatus.SUBMITTED,
        is_catch_trial=False,
        study_session__isnull=True,
        worker__user__username__in=DEMO_AUTHORS + DEMO_VALIDATORS,
    )
    attached = 0
    for worker in Worker.objects.filter(pk__in=claims.values("worker_id")).select_related("user").order_by("pk"):
        session, _ = StudySession.objects.get_or_create(
            study=study, worker=worker, external_session_id=f"demo-{worker.user.username}"
        )
        labels = claims.filter(worker=worker).update(study_session=session)
        session.tasks_done += math.ceil(labels / BATCH_SIZE)
        fields = ["tasks_done"]
        if session.completed_at is None and session.tasks_done >= study.tasks_per_batch:
            session.completed_at = timezone.now()
            session.completion_code = session.expected_completion_code()
            fields += ["completed_at", "completion_code"]
        session.save(update_fields=fields)
        attached += labels
    # The claims were attached here, not submitted through the task: credit each pair's latest as
    # the submit would (the cost page reads the flag).
    cost_tally.rebuild_with_credits(dataset)  # and the cost page's tallies that follow the flags
    return attached


@transaction.atomic
def load_demo() -> dict[str, Any]:
    """Load everything in one transaction; returns what was created, for the command's summary."""
    content_rows = install_prompt_content()
    dataset = ensure_dataset()
    _researcher, _worker, authors, _validators = ensure_accounts()
    ensure_study(WRITING_STUDY, dataset)
    ensure_study(VALIDATION_STUDY, dataset)
    premises_by_genre = ensure_premises(dataset)
    pairs_created = ensure_demo_pairs(dataset, premises_by_genre, authors)
    labels_added = add_demo_validation_labels(dataset)
    ensure_demo_study_sessions(dataset)
    return {
        "dataset": dataset,
        "content_rows": content_rows,
        "premises": sum(len(premises) for premises in premises_by_genre.values()),
        "pairs_created": pairs_created,
        "validation_labels_added": labels_added,
    }
