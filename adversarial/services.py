"""Writes of the adversarial writing task: claiming a premise with a target label, one try at the
model, the fooled writer's reason, and the end of a task. Safety for a paid crowd, enforced here:
a try only on the worker's own open claim in an open round (no free oracle); a hypothesis failing
collection's writing rules never reaches the model; `AdversarialStudy.tries_per_minute` per
browser session; a bonus only once verifiers uphold a fooled example (verification.py).
"""

import random
import uuid
from dataclasses import dataclass
from time import monotonic

from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count, QuerySet
from django.utils import timezone

from authorship.services import ClaimClock, evidence_of_pair, record_try_evidence, refused_fields
from collection import services as writing
from collection import shape_holds, writing_claims, writing_rules
from collection.models import WritingClaim
from collection.sentence_shape import ShapeProblem
from corpus.labels import LABELS
from corpus.models import Pair, Premise, Split, Worker
from corpus.services import create_pairs, set_needs_validation
from corpus.writings import unused_pair_ids
from crowd.models import ClaimStatus, CodeHoldDecision, Study, StudySession

from . import targets
from .models import AdversarialStudy, AdversarialTask, AdversarialTry, Round, RoundStatus, TaskState, Verification

MAX_REASON_CHARS = 300


class AdversarialRefused(Exception):
    """A request that cannot be served; the message is fit to show the worker."""


class RateLimited(AdversarialRefused):
    pass


@dataclass
class TryResult:
    attempt: AdversarialTry
    task: AdversarialTask
    tries_left: int


def study_settings(study: Study) -> AdversarialStudy:
    return AdversarialStudy.objects.get_or_create(study=study)[0]


def open_round(study: Study) -> Round | None:
    return Round.objects.filter(study=study, status=RoundStatus.OPEN).select_related("target_run").first()


def _next_target_label(round_: Round, premise: Premise) -> str:
    """The label this premise has had fewest adversarial tasks for in the round (ties at random)."""
    done = dict(
        AdversarialTask.objects.filter(round=round_, writing_claim__premise=premise)
        .values_list("target_label")
        .annotate(n=Count("pk"))
    )
    fewest = min(done.get(label, 0) for label in LABELS)
    return random.choice([label for label in LABELS if done.get(label, 0) == fewest])


def claim_adversarial_task(worker: Worker, study_session: StudySession) -> AdversarialTask | None:
    """The worker's open adversarial task in the study's open round, or a new one; None when no premise
    is left. The premise is claimed by the writing task's own claim, so the concurrency rules of
    writing claims hold here too; the adversarial task adds the round and the target label."""
    round_ = open_round(study_session.study)
    if round_ is None:
        return None
    try:
        claim = writing_claims.claim_next_premise(worker, dataset=round_.dataset, study_session=study_session)
    except writing_claims.NotAllowedToWrite:
        return None  # the round's team excluded the worker: no task for them
    if claim is not None and _release_if_round_closed(claim, round_):
        claim = writing_claims.claim_next_premise(worker, dataset=round_.dataset, study_session=study_session)
    if claim is None:
        return None
    with transaction.atomic():
        task = AdversarialTask.objects.filter(writing_claim=claim).first()
        if task is None:
            task = AdversarialTask.objects.create(
                writing_claim=claim, round=round_, worker=worker, target_label=_next_target_label(round_, claim.premise)
            )
    return task


def _release_if_round_closed(claim: WritingClaim, round_: Round) -> bool:
    """A claim still open from a round that has closed since: given back (its premise goes back to the
    pool, nothing is kept) so the worker moves on to the open round. True when it was released."""
    with transaction.atomic():
        task = AdversarialTask.objects.select_for_update(of=("self",)).filter(writing_claim=claim).first()
        if task is None or task.round_id == round_.pk or task.state != TaskState.WRITING:
            return False
        WritingClaim.objects.filter(pk=claim.pk, status=ClaimStatus.OPEN).update(status=ClaimStatus.RELEASED)
        task.state = TaskState.DONE
        task.finished_at = timezone.now()
        task.save(update_fields=["state", "finished_at"])
    return True


def task_for_worker(worker: Worker, token: uuid.UUID | str) -> AdversarialTask:
    """The worker's task by its claim token; AdversarialTask.DoesNotExist for anyone else's."""
    return AdversarialTask.objects.select_related(
        "writing_claim__premise", "writing_claim__study_session__study", "round__target_run"
    ).get(writing_claim__token=token, worker=worker)


def _check_rate(session_key: str, per_minute: int) -> None:
    """At most `per_minute` model queries per browser session in each clock minute (shared cache)."""
    key = f"adversarial:tries:{session_key}:{int(timezone.now().timestamp() // 60)}"
    cache.add(key, 0, 120)
    try:
        used = cache.incr(key)
    except ValueError:  # evicted between add and incr
        cache.set(key, 1, 120)
        used = 1
    if used > per_minute:
        raise RateLimited(
            f"That was more than {per_minute} tries in a minute. Please take a moment over your next sentence, "
            "then send it again; nothing was lost."
        )


def _locked_open_task(worker: Worker, token: uuid.UUID | str) -> AdversarialTask:
    task = (
        AdversarialTask.objects.select_for_update(of=("self",))
        .select_related("writing_claim__premise", "writing_claim__study_session__study", "round__target_run")
        .get(writing_claim__token=token, worker=worker)
    )
    claim = task.writing_claim
    if claim.status != ClaimStatus.OPEN or claim.expires_at <= timezone.now():
        raise AdversarialRefused("This task is no longer open (it was finished or its time ran out).")
    if task.round.status != RoundStatus.OPEN:
        raise AdversarialRefused("This round has closed; thank you. Please take a new task.")
    if task.state != TaskState.WRITING:
        raise AdversarialRefused("The model was fooled already: please give your reason below.")
    return task


def make_try(
    worker: Worker, token: uuid.UUID | str, hypothesis: str, session_key: str, typing_evidence: str | None = None
) -> TryResult:
    """Check the hypothesis, ask the target, store the try (with how it was typed: authorship app).
    Raises ValidationError({"hypothesis": ...}) for a hypothesis that fails the checks (the model is
    not asked), AdversarialRefused / RateLimited, targets.TargetUnavailable (nothing stored), and
    AdversarialTask.DoesNotExist for a token that is not the worker's."""
    text = writing_rules.visible_text(hypothesis)
    try:
        return _try_once(worker, token, text, session_key, typing_evidence)
    except ShapeRefused as refusal:
        # After the try's transaction rolled back: the refusal is the session's evidence (shape_holds).
        shape_holds.record_shape_refusals(refusal.study_session, [text])
        withhold_examples_of_salad(refusal.study_session)
        raise ValidationError({"hypothesis": refusal.message}) from None


class ShapeRefused(Exception):
    """A try refused for its shape, raised out of the try's transaction so that it is recorded after."""

    def __init__(self, study_session: StudySession, message: str) -> None:
        super().__init__(message)
        self.study_session, self.message = study_session, message


def _try_once(
    worker: Worker, token: uuid.UUID | str, text: str, session_key: str, typing_evidence: str | None
) -> TryResult:
    with transaction.atomic():
        # The task's row lock: two tries of one task (a double press) are taken one after the other.
        task = _locked_open_task(worker, token)
        premise = task.writing_claim.premise
        study_session = task.writing_claim.study_session
        # Nullable on writing claims in general; an adversarial task's claim is made in a study session.
        assert study_session is not None
        # Collection's one check under the study's rules: refused as the writing page refuses, so
        # no task takes a hypothesis another task would refuse.
        rules = writing.task_rules(study_session=study_session)
        confirmed = shape_holds.confirmed_texts(study_session)  # a shape warning sent again is overridden
        if problem := writing_rules.hypothesis_problem(premise.text, text, rules, confirmed=confirmed):
            if isinstance(problem, ShapeProblem):
                raise ShapeRefused(study_session, problem)
            raise ValidationError({"hypothesis": problem})
        tries = list(task.tries.values_list("hypothesis", flat=True))
        # Judged against the claim's own times; the page puts the last try back in the field.
        clock = ClaimClock(served_at=task.writing_claim.created_at, submitted_at=timezone.now())
        restorable = len(tries[-1]) if tries else 0
        refused = refused_fields(
            study_session,
            typing_evidence,
            {"hypothesis": text},
            clock=clock,
            restorable_chars={"hypothesis": restorable},
        )
        if refused:
            raise ValidationError(refused)
        if any(writing_rules.normalised(text) == writing_rules.normalised(before) for before in tries):
            raise ValidationError({"hypothesis": "You tried this sentence already. Please change it."})
        settings = study_settings(study_session.study)
        if len(tries) >= settings.max_tries:
            raise AdversarialRefused("You have used all your tries for this premise.")
        _check_rate(session_key, settings.tries_per_minute)
        started = monotonic()
        probabilities = targets.target_probabilities(task.round, premise.text, text)
        seconds = monotonic() - started
        prediction = targets.predicted(probabilities)
        fooled = prediction != task.target_label
        attempt = AdversarialTry.objects.create(
            task=task,
            round=task.round,
            number=len(tries) + 1,
            hypothesis=text,
            predicted_label=prediction,
            probabilities=probabilities,
            model_fooled=fooled,
            model_seconds=seconds,
            writing_evidence=record_try_evidence(
                worker, study_session, typing_evidence, "hypothesis", text, clock=clock, restorable_chars=restorable
            ),
        )
        tries_left = settings.max_tries - attempt.number
        if fooled:
            task.state = TaskState.REASON
            task.save(update_fields=["state"])
        elif tries_left == 0:
            _finish(task)
    return TryResult(attempt=attempt, task=task, tries_left=tries_left)


def give_reason(worker: Worker, token: uuid.UUID | str, reason: str) -> AdversarialTask:
    """The fooled writer's one-line reason; ends the task. ValidationError({"reason": ...}) when unusable."""
    text = writing_rules.visible_text(reason)
    if not text or writing_rules.word_characters(text) < 2:
        raise ValidationError({"reason": "Please say in a few words why your sentence is the label you were given."})
    if len(text) > MAX_REASON_CHARS:
        raise ValidationError({"reason": f"Please keep the reason to one line (under {MAX_REASON_CHARS} characters)."})
    with transaction.atomic():
        task = (
            AdversarialTask.objects.select_for_update(of=("self",))
            .select_related("writing_claim__premise", "writing_claim__study_session__study", "round")
            .get(writing_claim__token=token, worker=worker)
        )
        if task.state != TaskState.REASON:
            raise AdversarialRefused("This task is not waiting for a reason.")
        task.reason = text
        _finish(task)
    return task


def _finish(task: AdversarialTask) -> None:
    """End the task in the caller's transaction: its pair, the claim submitted, the session's count.
    Every try stays an AdversarialTry; the corpus gets one pair per task (one premise, writer, label):
    the fooled try on any split, an unfooled task's last try on a train premise only (ANLI §2.1: dev
    and test hold only verified fooled examples). A fooled pair is queued for verification."""
    claim = WritingClaim.objects.select_for_update(of=("self",)).get(pk=task.writing_claim_id)
    premise = writing_claims.lock_written_premise(claim.premise_id)
    last = task.tries.order_by("-number").first()
    created: list[Pair] = []
    if last is not None and (last.model_fooled or premise.split == Split.TRAIN):
        writing_number = premise.writings_done + 1
        (pair_id,) = unused_pair_ids(premise.dataset_id, [f"{premise.prompt_id}a{task.round.number}w{writing_number}"])
        pair = Pair(
            premise=premise,
            pair_id=pair_id,
            hypothesis=last.hypothesis,
            author_label=task.target_label,
            author=task.worker,
        )
        created = create_pairs(
            premise.dataset, premise.split, [pair], [[task.target_label]], needs_validation=last.model_fooled
        )
        last.pair = pair
        last.verification = Verification.PENDING if last.model_fooled else Verification.NOT_ASKED
        last.save(update_fields=["pair", "verification"])
        evidence_of_pair(last.writing_evidence_id, pair)
    now = timezone.now()
    writing.finish_writing_task(claim, premise, created, now)
    withhold_examples_of_salad(claim.study_session)
    task.state = TaskState.DONE
    task.finished_at = now
    task.save(update_fields=["state", "reason", "finished_at"])


def withhold_examples_of_salad(study_session: StudySession | None) -> int:
    """A session writing salad (collection.shape_holds) sends its fooled examples to no verifier while
    its code's hold waits; releasing the hold queues them again (`queue_released_examples`). Returns
    how many left the queue."""
    if study_session is None or not shape_holds.writes_salad(study_session):
        return 0
    return set_needs_validation(withheld_examples([study_session.pk], queued=True), False)


def withheld_examples(session_ids: list[int | None], *, queued: bool = False) -> QuerySet[Pair]:
    """The fooled examples of these study sessions still waiting for verifiers: those kept out of the
    queue (or, `queued`, those in it)."""
    return Pair.objects.filter(
        adversarial_try__task__writing_claim__study_session_id__in=session_ids,
        adversarial_try__verification=Verification.PENDING,
        needs_validation=queued,
    )


def queue_released_examples(sender: object, *, sessions: list[StudySession], decision: str, **kwargs: object) -> int:
    """A researcher released held codes (`crowd.holds.code_holds_decided`): the sessions' fooled
    examples kept from verifiers go to them now. A refused hold keeps them out for good."""
    if decision != CodeHoldDecision.RELEASED:
        return 0
    return set_needs_validation(withheld_examples([session.pk for session in sessions]), True)
