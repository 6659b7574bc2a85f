"""Writes of the hypothesis-writing task: submitting three hypotheses (and/or a problem report) and
the rules a writing task counts by. Claiming a premise is `writing_claims`.
"""

import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from artifacts.services import pairs_arriving
from authorship.services import ClaimClock, record_writing_evidence, refused_fields
from corpus.models import Label, Pair, Premise, PremiseStatus, Worker
from corpus.selectors import is_excluded_in
from corpus.services import create_pairs
from corpus.writings import unused_pair_ids
from crowd.claiming import claim_key, is_live
from crowd.models import ClaimStatus, StudySession
from crowd.services import record_task_done

from . import hypothesis_tally, shape_holds
from .models import PremiseReport, WritingClaim
from .writing_claims import NOT_TAKING_PART, ClaimAlreadySubmitted, ClaimExpired, lock_written_premise
from .writing_rules import TaskRules, hypothesis_problem, normalised, visible_text, word_characters

# The three text fields of the writing form, in the order the page shows them.
HYPOTHESIS_FIELDS = {Label.ENTAILMENT: "entailment", Label.NEUTRAL: "neutral", Label.CONTRADICTION: "contradiction"}
FIELD_SHORT_NAMES = {
    Label.ENTAILMENT: "definitely correct",
    Label.NEUTRAL: "might be correct",
    Label.CONTRADICTION: "definitely incorrect",
}


@dataclass
class WritingSubmission:
    claim: WritingClaim
    pairs: list[Pair] = field(default_factory=list)
    report: PremiseReport | None = None
    held: bool = False


# --- the rules a writing task counts by -----------------------------------------------------------


def task_rules(*, study_session: StudySession | None = None) -> TaskRules:
    limits: dict[str, int] = {
        "max_hypothesis_chars": settings.NLI["MAX_HYPOTHESIS_CHARS"],
        "max_report_chars": settings.NLI.get("MAX_REPORT_CHARS", 500),
    }
    if study_session is None:
        return TaskRules(
            max_hypothesis_chars=limits["max_hypothesis_chars"], max_report_chars=limits["max_report_chars"]
        )
    study = study_session.study
    return TaskRules(
        reports_to_hold_premise=max(1, study.reports_to_hold_premise),
        max_reports_per_batch=study.max_reports_per_batch,
        min_hypothesis_words=max(1, study.min_hypothesis_words),
        max_hypothesis_sentences=max(1, study.max_hypothesis_sentences),
        shape_check=study.shape_check,
        shape_refuse_at=study.shape_refuse_at,
        **limits,
    )


def reports_sent(worker: Worker, study_session: StudySession | None) -> int:
    """The reports that count against the worker's cap: this visit's, or (outside a study) the unresolved ones."""
    reports = PremiseReport.objects.filter(worker=worker)
    if study_session is not None:
        reports = reports.filter(study_session=study_session)
    else:
        reports = reports.filter(study_session__isnull=True, resolved=False)
    return reports.count()


def report_cap_message(rules: TaskRules) -> str:
    return (
        f"You have sent {rules.max_reports_per_batch} problem report{'s' if rules.max_reports_per_batch != 1 else ''}"
        " in this batch, the most a batch takes. Please write the three sentences for this line; "
        "if it really cannot be written about, do your best and a researcher will see it in review."
    )


def report_errors(report_text: str, rules: TaskRules, *, reports_already: int = 0) -> dict[str, str]:
    """Field name -> message for a problem report that cannot be taken (empty dict when fine)."""
    if not report_text:
        return {}
    if len(report_text) > rules.max_report_chars:
        return {
            "problem_report": f"Please keep the report under {rules.max_report_chars} characters "
            f"(it has {len(report_text)})."
        }
    if word_characters(report_text) < 2:
        return {"problem_report": "Please say in words what is wrong with the line."}
    if reports_already >= rules.max_reports_per_batch:
        return {"problem_report": report_cap_message(rules)}
    return {}


# --- checking and submitting hypotheses ------------------------------------------------------


def hypothesis_errors(
    premise_text: str,
    hypotheses: Mapping[Label, str | None],
    *,
    problem_report: str | None = "",
    rules: TaskRules | None = None,
    confirmed: Collection[str] | None = None,
) -> dict[str, str]:
    """Field name -> message for every rule the three hypotheses break (empty dict when fine).

    `hypotheses` maps Label -> text; texts are judged as `visible_text` leaves them (what the
    reader sees). `confirmed`: the texts the writer was warned about for their shape already (None
    outside a study session: no warnings). A worker who only reports a problem (all three empty)
    breaks no hypothesis rule; the report's own rules are `report_errors`.
    """
    rules = rules or task_rules()
    texts = {label: visible_text(hypotheses.get(label)) for label in HYPOTHESIS_FIELDS}
    if visible_text(problem_report) and not any(texts.values()):
        return {}
    errors: dict[str, str] = {}
    seen: dict[str, str] = {}
    written: list[str] = []  # the hypotheses before this one, for the look-alike comparison
    for label, name in HYPOTHESIS_FIELDS.items():
        text = texts[label]
        if problem := hypothesis_problem(premise_text, text, rules, others=written, named=seen, confirmed=confirmed):
            errors[name] = problem
        else:
            seen[normalised(text)] = FIELD_SHORT_NAMES[label]
        written.append(text)
    return errors


def _pair_id(premise: Premise, writing_number: int, label: Label) -> str:
    # The first writing keeps MultiNLI's form, the promptID and the label's first letter ("31193n");
    # later writings of the same premise add their number ("31193n2"). `unused_pair_ids` keeps them
    # off ids the dataset has already.
    suffix = "" if writing_number == 1 else str(writing_number)
    return f"{premise.prompt_id}{label.value[0]}{suffix}"


def create_written_pairs(premise: Premise, author: Worker, texts: Mapping[Label, str]) -> list[Pair]:
    """One writing's three pairs, each with its author's label at position 1 and its counters, in the
    caller's transaction, which also moves `premise.writings_done`."""
    writing_number = premise.writings_done + 1
    pair_ids = unused_pair_ids(
        premise.dataset_id, [_pair_id(premise, writing_number, label) for label in HYPOTHESIS_FIELDS]
    )
    pairs = [
        Pair(premise=premise, pair_id=pair_id, hypothesis=texts[label], author_label=label, author=author)
        for label, pair_id in zip(HYPOTHESIS_FIELDS, pair_ids, strict=True)
    ]
    return create_pairs(premise.dataset, premise.split, pairs, [[label] for label in HYPOTHESIS_FIELDS])


def submit_hypotheses(
    worker: Worker,
    claim_token: uuid.UUID | str,
    entailment: str,
    neutral: str,
    contradiction: str,
    *,
    problem_report: str = "",
    typing_evidence: str | None = None,
) -> WritingSubmission:
    """Save a worker's three hypotheses (and/or their problem report) for one claim, in one
    transaction: pairs, the premise's writing count, the claim and the session's task count.

    Once workers of `rules.reports_to_hold_premise` distinct accounts have reported the premise, it
    is held for a researcher. A report alone releases the claim, saves nothing else and does not
    count: a batch completes only with written tasks. `typing_evidence` (authorship app) is stored
    beside each pair; a study that refuses pasted text refuses the fields it marks.

    Raises ValidationError (keyed by field) for bad text, ClaimExpired, ClaimAlreadySubmitted,
    and WritingClaim.DoesNotExist when the token is not this worker's.
    """
    texts = {
        label: visible_text(text)
        for label, text in zip(HYPOTHESIS_FIELDS, (entailment, neutral, contradiction), strict=True)
    }
    report_text = visible_text(problem_report)
    # Refused for shape: recorded once the refused submit's transaction has rolled back (shape_holds).
    refused_for_shape: list[str] = []
    study_session: StudySession | None = None
    try:
        with transaction.atomic():
            # The row lock makes a second submit of the same token wait, then see "submitted".
            token = claim_key(claim_token)
            claim = (
                None
                if token is None
                else WritingClaim.objects.select_for_update(of=("self",))
                .select_related("premise__dataset", "study_session__study")
                .filter(token=token, worker=worker)
                .first()
            )
            if claim is None:
                raise WritingClaim.DoesNotExist("No writing claim of this worker has this token.")
            if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
                raise ClaimAlreadySubmitted("These sentences were already saved.")
            # The premise's rows only: its dataset's row stays unlocked (the pairs' inserts take a key
            # share lock on it, which a FOR UPDATE of it would make every writer of the dataset wait for).
            premise = lock_written_premise(claim.premise_id)
            # The clock is read under the premise's locks: a claim that took this place after it
            # expired committed before we got them, so this reading is past the expiry too.
            now = timezone.now()
            if not is_live(claim, now):
                # Left open here; the worker's next claim marks it expired (this transaction rolls back).
                raise ClaimExpired("This task expired before it was sent.")
            study_session = claim.study_session
            if is_excluded_in(worker, premise.dataset.team_id):  # excluded while the line was theirs
                raise ValidationError({NON_FIELD_ERRORS: [NOT_TAKING_PART]})
            rules = task_rules(study_session=study_session)
            confirmed = shape_holds.confirmed_texts(study_session)
            errors = hypothesis_errors(
                premise.text, texts, problem_report=report_text, rules=rules, confirmed=confirmed
            )
            # The typing record is judged against the claim's own times (served to this submit).
            clock = ClaimClock(served_at=claim.created_at, submitted_at=now)
            by_field = {HYPOTHESIS_FIELDS[label]: text for label, text in texts.items()}
            errors.update(refused_fields(study_session, typing_evidence, by_field, clock=clock))
            if report_text:
                if study_session is not None:
                    # The visit's row lock: two reports of one visit are counted one after the other.
                    StudySession.objects.select_for_update().filter(pk=study_session.pk).first()
                errors.update(report_errors(report_text, rules, reports_already=reports_sent(worker, study_session)))
            refused_for_shape = shape_holds.shape_refused(errors, by_field)
            if errors:
                raise ValidationError(errors)

            result = WritingSubmission(claim=claim)
            if report_text:
                result.report = PremiseReport.objects.create(
                    premise=premise, worker=worker, message=report_text, study_session=study_session
                )
                reporters = (
                    PremiseReport.objects.filter(premise=premise, resolved=False, worker__isnull=False)
                    .values("worker_id")
                    .distinct()
                    .count()
                )
                if reporters >= rules.reports_to_hold_premise:
                    premise.status = PremiseStatus.HELD
                    result.held = True
            if any(texts.values()):
                result.pairs = create_written_pairs(premise, worker, texts)
                written = [(HYPOTHESIS_FIELDS[Label(pair.author_label)], pair) for pair in result.pairs]
                record_writing_evidence(worker, study_session, typing_evidence, written, clock=clock)
                finish_writing_task(claim, premise, result.pairs, now)
            else:
                # Only the report: the premise goes back to the pool (unless now held) and the task
                # does not count towards the completion code; the worker is offered another.
                premise.save(update_fields=["status"])
                claim.status, claim.submitted_at = ClaimStatus.RELEASED, now
                claim.save(update_fields=["status", "submitted_at"])
    except ValidationError:
        shape_holds.record_shape_refusals(study_session, refused_for_shape)
        raise
    return result


def finish_writing_task(claim: WritingClaim, premise: Premise, pairs: Sequence[Pair], now: datetime) -> None:
    """The end of a writing task (the writing submit's three pairs, an adversarial task's one pair or
    none), in the caller's transaction, with the claim and premise rows locked. The premise's status
    is saved too: a report may have held it."""
    hypothesis_tally.written(claim.study_session, premise, len(pairs))
    premise.writings_done += 1
    premise.save(update_fields=["status", "writings_done"])
    claim.status, claim.submitted_at = ClaimStatus.SUBMITTED, now
    claim.save(update_fields=["status", "submitted_at"])
    if pairs:
        pairs_arriving(premise.dataset_id)
    record_task_done(claim.study_session)


def writings_left(worker: Worker, premise_ids: Collection[int]) -> int:
    """A person's written pairs on these premises left the corpus (a withdrawal or an erasure): each
    premise counts one writing fewer, so the writing claim serves it again. One UPDATE under the
    premises' row locks, in the caller's transaction; returns premises moved. Called once for the
    pairs that leave, so a second withdrawal or erasure moves nothing."""
    if not premise_ids:
        return 0
    written = WritingClaim.objects.filter(
        worker=worker, premise_id__in=sorted(premise_ids), status=ClaimStatus.SUBMITTED
    ).values("premise_id")
    return Premise.objects.filter(pk__in=written, writings_done__gt=0).update(writings_done=F("writings_done") - 1)
