"""Demo of the decided stopping rule: a small dataset whose dev split is on it, labelled one label
at a time by the demo's validators in a finished study, so the validation page (?dataset=demo-decided)
shows the pairs that stopped early and the Costs page the labels saved."""

from decimal import Decimal

from django.db import transaction
from django.utils import timezone

from corpus.models import Dataset, Genre, Pair, Premise, Split, StoppingPolicy, StoppingRule
from corpus.services import add_labels, create_pairs
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from validation import cost_tally
from validation.models import ValidationClaim

from .content import DEMO_AUTHORS, DEMO_VALIDATORS, ensure_worker

DATASET = "demo-decided"
STUDY = {
    "slug": "demo-decided-validation",
    "name": "Demo: labels on the decided stopping rule",
    "task_kind": TaskKind.VALIDATION,
    "tasks_per_batch": 1,
    "completion_code": "DEMO-DECIDED-4321",
    "payment_per_task": Decimal("0.40"),
    # The demo has no market and its ids are made up: an open link (crowd.arrival.launch_refusal).
    "open_link_unverified": True,
}
GENRE = "captions"
# Label sequences (the author's first) in the shapes SNLI dev has: unanimous, 4-1, 3-2, no gold.
SEQUENCES = [
    ["entailment"] * 5,
    ["contradiction"] * 5,
    ["neutral", "neutral", "entailment", "neutral", "neutral"],
    ["entailment", "neutral", "entailment", "entailment", "contradiction"],
    ["contradiction", "contradiction", "neutral", "contradiction", "contradiction"],
    ["neutral", "entailment", "neutral", "contradiction", "entailment"],
    ["entailment", "entailment", "entailment", "neutral", "entailment"],
    ["neutral"] * 5,
]
PREMISE = "A man in a red jacket rides a bicycle past a market stall."


@transaction.atomic
def ensure_stopping_demo() -> str:
    """Create the dataset once (idempotent); returns a line for the command's summary."""
    dataset, created = Dataset.objects.get_or_create(slug=DATASET, defaults={"name": "Demo: decided stopping rule"})
    if created or not dataset.pairs.exists():
        StoppingPolicy.objects.update_or_create(
            dataset=dataset, split=Split.DEV, defaults={"rule": StoppingRule.DECIDED}
        )
        genre = Genre.objects.filter(slug=GENRE).first() or Genre.objects.order_by("slug").first()
        if genre is None:
            raise ValueError("no genre to put the demo premise in: the corpus migrations add them")
        premise = Premise.objects.create(
            dataset=dataset, genre=genre, split=Split.DEV, prompt_id="decided-1", text=PREMISE
        )
        pairs = [
            Pair(premise=premise, pair_id=f"decided-1-{i}", hypothesis=f"A person is outside ({i}).", author_label=s[0])
            for i, s in enumerate(SEQUENCES)
        ]
        created_pairs = create_pairs(dataset, Split.DEV, pairs, [s[:1] for s in SEQUENCES], needs_validation=True)
        study, _ = Study.objects.update_or_create(slug=STUDY["slug"], defaults={**STUDY, "dataset": dataset})
        # The demo's authors and validators (load_demo made them; made here, without a password, if not).
        validators = [ensure_worker(name) for name in sorted(DEMO_AUTHORS + DEMO_VALIDATORS)]
        sessions: dict[int, StudySession] = {}
        for pair, sequence in zip(created_pairs, SEQUENCES, strict=True):
            for validator, label in zip(validators, sequence[1:], strict=False):
                pair.refresh_from_db(fields=["needs_validation"])
                if not pair.needs_validation:
                    break  # the decided rule stopped it: no validator is served it again
                session = sessions.get(validator.pk)
                if session is None:
                    session = sessions[validator.pk] = StudySession.objects.create(
                        study=study, worker=validator, external_session_id=f"demo-decided-{validator.pk}"
                    )
                add_labels([(pair, label)], worker=validator)
                now = timezone.now()
                ValidationClaim.objects.create(
                    worker=validator,
                    pair=pair,
                    study_session=session,
                    status=ClaimStatus.SUBMITTED,
                    expires_at=now,
                    submitted_at=now,
                )
        for session in sessions.values():
            # One task per batch of up to five labels, as the validation task counts them.
            labels = ValidationClaim.objects.filter(study_session=session).count()
            session.tasks_done = -(-labels // 5)
            session.completed_at = timezone.now()
            session.completion_code = session.expected_completion_code()
            session.save(update_fields=["tasks_done", "completed_at", "completion_code"])
        # Claims made here, not through the task's submit: credit each pair's latest as it would.
        cost_tally.rebuild_with_credits(dataset)  # and the cost page's tallies that follow the flags
    stopped = Pair.objects.filter(dataset=dataset, stopped_early=True)
    saved = sum(5 - n for n in stopped.values_list("label_count", flat=True))
    return (
        f"Dataset '{DATASET}' (dev on the decided stopping rule): {dataset.pairs.count()} pairs, "
        f"{stopped.count()} stopped early, {saved} validation labels saved, no gold label changed."
    )
