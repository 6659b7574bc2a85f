"""The demo's adversarial study, for `make demo`: round 1 finished (its target the demo's small
CBOW run, scripted writers' tries, verifiers, the next target trained in-process) and round 2 open
on the new checkpoint. Idempotent: a study with round 2 open is left as it is.
"""

from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model

from adversarial import rounds, services
from adversarial.models import AdversarialStudy, AdversarialTry, Round, RoundStatus, TaskState
from corpus.models import Dataset, Genre, Premise, Split
from crowd.models import Study, StudySession, TaskKind
from modeling.models import RunStatus, TrainingRun
from validation.batch_claims import claim_validation_batch
from validation.selectors import batch_claims
from validation.services import submit_validation_batch

from .content import ensure_worker
from .training import DEMO_CONFIG

STUDY = {"slug": "demo-adversarial", "name": "Fool the model (adversarial writing)"}
DATASET = "demo-adversarial"
PREMISES = [
    (Split.TRAIN, "A man in a red jacket is fixing a bicycle on the sidewalk."),
    (Split.TRAIN, "Two children are building a sandcastle near the water."),
    (Split.TRAIN, "A woman reads a newspaper while waiting for the train."),
    (Split.TRAIN, "The chef is slicing onions in a busy kitchen."),
    (Split.DEV, "An old dog sleeps in the sun on a wooden porch."),
    (Split.DEV, "A group of friends are laughing around a campfire."),
    (Split.TEST, "A musician plays the violin in a crowded square."),
    (Split.TEST, "Three men are carrying a sofa up the stairs."),
    (Split.TEST, "A girl in a yellow raincoat jumps into a puddle."),
    (Split.TRAIN, "A farmer drives a tractor across a muddy field."),
    (Split.TEST, "A waiter carries a tray of drinks to a table."),
    (Split.DEV, "A cyclist waits at a red light in the rain."),
]
PREMISES_ROUND_2 = [
    (Split.TRAIN, "A boy throws a ball for his dog in the park."),
    (Split.TRAIN, "A woman paints a picture of the sea."),
    (Split.DEV, "Two old men play chess on a bench."),
    (Split.TEST, "A nurse checks the pulse of a patient."),
    (Split.TEST, "Workers repair a road at night."),
    (Split.TRAIN, "A baker takes bread out of the oven."),
]
# What the scripted writers try for each target label, in order (three tries).
TRIES = {
    "entailment": ["Someone is outside.", "A person is doing something.", "There is at least one person."],
    "neutral": ["The person is happy today.", "Someone is there for the first time.", "The weather is warm."],
    "contradiction": ["Nobody is there at all.", "The place is completely empty.", "No people are outside."],
}
WRITERS = ("adv-writer-1", "adv-writer-2", "adv-writer-3")
VERIFIERS = ("adv-verifier-1", "adv-verifier-2", "adv-verifier-3")


def _first_target(researcher: Any) -> Any:
    return (
        TrainingRun.objects.filter(model="cbow", status=RunStatus.DONE, created_by=researcher)
        .exclude(checkpoint_sha256="")
        .filter(config__train_genre=None)
        .order_by("pk")
        .first()
    )


def ensure_adversarial_demo(researcher_username: str) -> str:
    """The adversarial study with round 1 closed and round 2 open; returns a line for the console."""
    researcher = get_user_model().objects.get(username=researcher_username)
    study = Study.objects.filter(slug=STUDY["slug"]).first()
    if study is not None and Round.objects.filter(study=study, number=2, status=RoundStatus.OPEN).exists():
        return _summary(study)
    target = _first_target(researcher)
    if target is None:
        return "Adversarial study: skipped (no demo CBOW run to attack; run without --no-training)."
    dataset = _dataset(DATASET, "Demo adversarial round 1", PREMISES, "adv")
    round2_dataset = _dataset(f"{DATASET}-r2", "Demo adversarial round 2", PREMISES_ROUND_2, "adv2-")
    study, _ = Study.objects.get_or_create(
        slug=STUDY["slug"],
        defaults={
            "name": STUDY["name"],
            "dataset": dataset,
            "task_kind": TaskKind.ADVERSARIAL,
            "tasks_per_batch": 4,
            "completion_code": "DEMO-ADV",
            "payment_per_task": Decimal("1.00"),
            # The demo has no market and its ids are made up: an open link (crowd.arrival.launch_refusal).
            "open_link_unverified": True,
        },
    )
    AdversarialStudy.objects.get_or_create(
        study=study, defaults={"max_tries": 3, "bonus_per_verified_fooled": "0.50", "tries_per_minute": 30}
    )
    round1 = Round.objects.filter(study=study, number=1).first() or rounds.open_first_round(
        study, dataset, target_run=target, next_model="cbow", next_config=DEMO_CONFIG
    )
    if round1.status == RoundStatus.OPEN:
        _write(study, round1)
        _verify(dataset)
        rounds.close_round(round1, user=researcher, next_dataset=round2_dataset, confirm_unverified=True)
    for _ in range(5):  # inline tasks: the exports and the run are done by now; each call is one step
        rounds.advance_round(round1, user=researcher)
        round1.refresh_from_db()
        if round1.status == RoundStatus.CLOSED:
            break
    return _summary(study)


def _dataset(slug: str, name: str, premises: Any, prefix: str) -> Any:
    dataset, _ = Dataset.objects.get_or_create(slug=slug, defaults={"name": name})
    genre = Genre.objects.order_by("slug").first()
    if genre is None:
        raise ValueError("no genre to put the demo premises in: the corpus migrations add them")
    for number, (split, text) in enumerate(premises, 1):
        Premise.objects.get_or_create(
            dataset=dataset, prompt_id=f"{prefix}{number}", defaults={"text": text, "split": split, "genre": genre}
        )
    return dataset


def _write(study: Any, round_: Any) -> None:
    for name in WRITERS:
        writer = ensure_worker(name)
        session, _ = StudySession.objects.get_or_create(study=study, worker=writer, external_session_id=f"demo-{name}")
        while not session.is_complete:
            task = services.claim_adversarial_task(writer, session)
            if task is None:
                break
            token = task.writing_claim.token
            for text in TRIES[task.target_label]:
                result = services.make_try(writer, token, text, session_key=f"demo-{name}")
                if result.task.state != TaskState.WRITING:
                    break
            if result.task.state == TaskState.REASON:
                services.give_reason(writer, token, "The line does not say that; my sentence has the asked label.")
            session.refresh_from_db()


def _verify(dataset: Any) -> None:
    verifiers = [ensure_worker(name) for name in VERIFIERS]
    for index, verifier in enumerate(verifiers):
        while (batch := claim_validation_batch(verifier, dataset=dataset)) is not None:
            labels = {}
            for claim in batch_claims(verifier, batch):
                label = claim.pair.author_label
                # The second verifier disagrees on every third pair, so some need the third verifier.
                if index == 1 and claim.pair_id % 3 == 0:
                    label = "neutral" if label != "neutral" else "entailment"
                labels[claim.pair_id] = label
            submit_validation_batch(verifier, batch, labels)


def _summary(study: Any) -> str:
    parts = []
    for round_ in Round.objects.filter(study=study).order_by("number"):
        tries = AdversarialTry.objects.filter(round=round_)
        parts.append(
            f"round {round_.number} {round_.status} ({tries.count()} tries, {tries.filter(model_fooled=True).count()} fooled)"
        )
    return f"Adversarial study '{study.slug}': " + "; ".join(parts) + "."
