"""Writes of the hypothesis-writing task: claiming a premise, submitting three hypotheses,
and counting a crowd-market worker's tasks towards their completion code.

The claim policy, top to bottom (see `claim_next_premise`):
  1. a worker who reloads gets their own open, unexpired claim back;
  2. their stale claim is marked expired (it no longer counts against the premise);
  3. a candidate premise is available, has a split, still needs writings
     (writings done + open unexpired claims < dataset.writings_per_premise) and was never
     claimed by this worker; the least-written come first so work spreads evenly;
  4. on PostgreSQL the candidate row is locked with SELECT ... FOR UPDATE SKIP LOCKED, so two
     workers asking at the same moment never wait on, or get, the same premise. SQLite
     serialises writers (transaction_mode IMMEDIATE), which gives the same guarantee.
"""

import re
import string
import unicodedata
import uuid
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, IntegerField, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotation_site.celery import enqueue_coalesced
from annotation_site.compiled_queries import CompiledQuery, as_uuid
from artifacts.services import ARRIVAL_TASK
from authorship.services import hold_code_of_typist, record_writing_evidence, refused_fields
from corpus.counters import create_pairs
from corpus.models import Dataset, Label, Pair, Premise, PremiseStatus, Worker
from crowd.models import ClaimStatus, StudySession
from crowd.services import first_hold_reason, record_task_done
from quality.guessers import hold_code_of_guesser

from . import hypothesis_tally
from .models import PremiseReport, WritingClaim
from .premise_text import split_sentences
from .writing_rules import writing_problem

# The three text fields of the writing form, in the order the page shows them.
HYPOTHESIS_FIELDS = {
    Label.ENTAILMENT: "entailment",
    Label.NEUTRAL: "neutral",
    Label.CONTRADICTION: "contradiction",
}
FIELD_SHORT_NAMES = {
    Label.ENTAILMENT: "definitely correct",
    Label.NEUTRAL: "might be correct",
    Label.CONTRADICTION: "definitely incorrect",
}
# MultiNLI's pairIDs are the promptID followed by the label's first letter (e.g. "31193n").
PAIR_ID_LETTER = {Label.ENTAILMENT: "e", Label.NEUTRAL: "n", Label.CONTRADICTION: "c"}
# How many locked candidates a claim re-checks before it gives up (each was full on a re-count).
MAX_CANDIDATES_PER_CLAIM = 20


class WritingTaskError(Exception):
    """A submit that cannot be saved for a reason the worker should be told about."""


class ClaimExpired(WritingTaskError):
    pass


class ClaimAlreadySubmitted(WritingTaskError):
    pass


@dataclass
class WritingSubmission:
    claim: WritingClaim
    pairs: list[Pair] = field(default_factory=list)
    report: PremiseReport | None = None
    held: bool = False


# --- claiming a premise ----------------------------------------------------------------------


def _claim_minutes() -> int:
    return settings.NLI["WRITING_CLAIM_MINUTES"]


def _collected_dataset(dataset: Dataset | None) -> Dataset | None:
    """The dataset a claim draws from: the given one, else the default collection, else None (any
    dataset we collect ourselves, never an imported corpus)."""
    if dataset is not None:
        return dataset
    return Dataset.objects.filter(slug=settings.NLI["DEFAULT_DATASET"]).first()


def _open_claims_subquery(now: datetime) -> Subquery:
    return Subquery(
        WritingClaim.objects.filter(premise=OuterRef("pk"), status=ClaimStatus.OPEN, expires_at__gt=now)
        .order_by()
        .values("premise")
        .annotate(n=Count("pk"))
        .values("n"),
        output_field=IntegerField(),
    )


def claimable_premises(
    worker: Worker, *, dataset: Dataset | None = None, now: datetime | None = None
) -> QuerySet[Premise]:
    """Premises this worker could be given now, least-written first.

    With one dataset (the usual case) the query reads `dataset_id = %s ... ORDER BY
    writings_done, claims_made, id` with the dataset's writings_per_premise as a constant, which
    walks the partial index `premise_claim_order` and stops at the first premise with room,
    probing the open claims of each premise it passes (one index lookup each). A premise's
    `claims_made` grows with each claim, so the premises held by open claims sort after the
    unclaimed ones of the same writings_done and the walk seldom passes any: O(log n).
    """
    now = now or timezone.now()
    dataset = _collected_dataset(dataset)
    premises = Premise.objects.filter(status=PremiseStatus.AVAILABLE).exclude(split="")
    limit: Value | F
    if dataset is not None:
        premises = premises.filter(dataset_id=dataset.pk)
        limit = Value(dataset.writings_per_premise)
    else:
        premises = premises.filter(dataset__is_imported=False)
        limit = F("dataset__writings_per_premise")
    return (
        premises.exclude(pk__in=WritingClaim.objects.filter(worker=worker).values("premise_id"))
        .alias(load=F("writings_done") + Coalesce(_open_claims_subquery(now), Value(0)))
        .filter(load__lt=limit)
        .order_by("writings_done", "claims_made", "id")
    )


def _count_claim(premise_id: int) -> None:
    """One more claim made on the premise (its row is locked): it sorts after the unclaimed ones."""
    Premise.objects.filter(pk=premise_id).update(claims_made=F("claims_made") + 1)


def _has_room(premise_id: int, now: datetime) -> bool:
    """Re-count a locked premise in a fresh statement: it sees every claim committed before our lock."""
    row = (
        Premise.objects.filter(pk=premise_id)
        .annotate(load=F("writings_done") + Coalesce(_open_claims_subquery(now), Value(0)))
        .values("load", "dataset__writings_per_premise", "status")
        .get()
    )
    return bool(row["status"] == PremiseStatus.AVAILABLE and row["load"] < row["dataset__writings_per_premise"])


def _own_open_claim(worker: Worker, now: datetime) -> WritingClaim | None:
    claim = WritingClaim.objects.select_for_update().filter(worker=worker, status=ClaimStatus.OPEN).first()
    if claim is None:
        return None
    if claim.expires_at > now:
        return claim
    claim.status = ClaimStatus.EXPIRED
    claim.save(update_fields=["status"])
    return None


# `claimable_premises(worker, dataset=dataset, now=now)[:1]` locked, written out for PostgreSQL: the
# same statement and plan (tests/collection/test_writing_candidate_sql.py compares them), without
# the ORM building it anew for every claim, which cost more CPU than the database spent on it.
CANDIDATE_SQL = """
SELECT p.id FROM {premises} p
WHERE p.status = %(available)s AND NOT (p.split = '') AND p.dataset_id = %(dataset)s
  AND NOT (p.id IN (SELECT w.premise_id FROM {claims} w WHERE w.worker_id = %(worker)s))
  AND NOT (p.id = ANY(%(skipped)s))
  AND p.writings_done + COALESCE((
      SELECT count(c.id) FROM {claims} c
      WHERE c.expires_at > %(now)s AND c.premise_id = p.id AND c.status = %(open)s GROUP BY c.premise_id
  ), 0) < %(limit)s
ORDER BY p.writings_done ASC, p.claims_made ASC, p.id ASC
LIMIT 1 FOR UPDATE OF p {skip}
"""


def _lock_candidate_id(
    worker: Worker, dataset: Dataset, now: datetime, exclude_ids: Sequence[int], skip_locked: bool
) -> int | None:
    """PostgreSQL: the id of the first claimable premise of `dataset`, locked (SKIP LOCKED when asked)."""
    sql = CANDIDATE_SQL.format(
        premises=Premise._meta.db_table, claims=WritingClaim._meta.db_table, skip="SKIP LOCKED" if skip_locked else ""
    )
    params: dict[str, int | str | datetime | list[int]] = {
        "available": PremiseStatus.AVAILABLE.value,
        "dataset": dataset.pk,
        "worker": worker.pk,
        "skipped": list(exclude_ids),
        "now": now,
        "open": ClaimStatus.OPEN.value,
        "limit": dataset.writings_per_premise,
    }
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    return None if row is None else int(row[0])


def _lock_candidate(
    worker: Worker, dataset: Dataset | None, now: datetime, exclude_ids: Sequence[int], skip_locked: bool
) -> Premise | None:
    candidates = claimable_premises(worker, dataset=dataset, now=now).exclude(pk__in=exclude_ids)
    if connection.features.has_select_for_update:
        skip_locked = skip_locked and connection.features.has_select_for_update_skip_locked
        candidates = candidates.select_for_update(skip_locked=skip_locked, of=("self",))
    return candidates.first()


def _claim_once(worker: Worker, dataset: Dataset | None, study_session: StudySession | None) -> WritingClaim | None:
    now = timezone.now()
    if connection.vendor == "postgresql":
        dataset = _collected_dataset(dataset)
        if dataset is not None:
            return _claim_once_postgresql(worker, dataset, study_session, now)
    with transaction.atomic():
        own = _own_open_claim(worker, now)
        if own is not None:
            return own
        skipped: list[int] = []
        skip_locked = True
        for _ in range(MAX_CANDIDATES_PER_CLAIM):
            premise = _lock_candidate(worker, dataset, now, skipped, skip_locked)
            if premise is None:
                if not skip_locked:
                    # The same worker may have won the last premise in another tab meanwhile.
                    return _own_open_claim(worker, now)
                # Every candidate was locked by someone claiming or submitting right now. Those
                # may leave room (writings_per_premise > 1, or a claim that fails), so wait for
                # one rather than say "no tasks" while work is left.
                skip_locked = False
                continue
            # Between our snapshot and our lock another worker may have claimed this premise
            # and committed; a fresh count (taken while we hold the row) tells the truth.
            if connection.vendor == "postgresql":
                claim = _claim_if_room(worker, premise.pk, now, study_session)
                if claim is not None:
                    return claim
            elif _has_room(premise.pk, now):
                _count_claim(premise.pk)
                return WritingClaim.objects.create(
                    worker=worker,
                    premise=premise,
                    study_session=study_session,
                    expires_at=now + timedelta(minutes=_claim_minutes()),
                )
            skipped.append(premise.pk)
        return _own_open_claim(worker, now)


def _own_open_claim_postgresql(worker: Worker, now: datetime) -> WritingClaim | None:
    """`_own_open_claim` in one raw statement for the usual case, a worker who holds nothing; a
    worker who does (a reload, a second tab) goes through the ORM as before."""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT id FROM {WritingClaim._meta.db_table} WHERE worker_id = %s AND status = %s LIMIT 1 FOR UPDATE",
            [worker.pk, ClaimStatus.OPEN.value],
        )
        held = cursor.fetchone() is not None
    return _own_open_claim(worker, now) if held else None


def _claim_once_postgresql(
    worker: Worker, dataset: Dataset, study_session: StudySession | None, now: datetime
) -> WritingClaim | None:
    """`_claim_once` for one dataset on PostgreSQL: the same statements and locks, in raw SQL."""
    with transaction.atomic():
        own = _own_open_claim_postgresql(worker, now)
        if own is not None:
            return own
        skipped: list[int] = []
        skip_locked = True
        for _ in range(MAX_CANDIDATES_PER_CLAIM):
            premise_id = _lock_candidate_id(worker, dataset, now, skipped, skip_locked)
            if premise_id is None:
                if not skip_locked:
                    return _own_open_claim(worker, now)  # won in another tab meanwhile
                skip_locked = False  # every candidate locked right now: wait for one (see _claim_once)
                continue
            claim = _claim_if_room(worker, premise_id, now, study_session)
            if claim is not None:
                return claim
            skipped.append(premise_id)
        return _own_open_claim(worker, now)


CLAIM_SQL = """
WITH roomy AS (
    SELECT p.id FROM {premises} p JOIN {datasets} d ON d.id = p.dataset_id
    WHERE p.id = %(premise)s AND p.status = %(available)s AND p.writings_done + (
        SELECT count(*) FROM {claims} c WHERE c.premise_id = p.id AND c.status = %(open)s AND c.expires_at > %(now)s
    ) < d.writings_per_premise
), counted AS (
    UPDATE {premises} SET claims_made = claims_made + 1 WHERE id IN (SELECT id FROM roomy) RETURNING id
)
INSERT INTO {claims} (token, worker_id, premise_id, study_session_id, status, created_at, expires_at)
SELECT %(token)s, %(worker)s, counted.id, %(session)s, %(open)s, %(now)s, %(expires_at)s FROM counted
RETURNING id
"""


def _claim_if_room(
    worker: Worker, premise_id: int, now: datetime, study_session: StudySession | None
) -> WritingClaim | None:
    """PostgreSQL: the fresh count of the locked premise's places, its claims_made and the claim,
    in one statement (what `_has_room`, `_count_claim` and the insert do in three). A new
    statement's snapshot: it sees every claim committed before our lock. None when it is full."""
    claim = WritingClaim(
        worker=worker,
        premise_id=premise_id,
        study_session=study_session,
        status=ClaimStatus.OPEN,
        created_at=now,
        expires_at=now + timedelta(minutes=_claim_minutes()),
    )
    params: dict[str, int | str | datetime | uuid.UUID | None] = {
        "premise": premise_id,
        "available": PremiseStatus.AVAILABLE.value,
        "open": ClaimStatus.OPEN.value,
        "now": now,
        "token": claim.token,
        "worker": worker.pk,
        "session": study_session.pk if study_session is not None else None,
        "expires_at": claim.expires_at,
    }
    sql = CLAIM_SQL.format(
        premises=Premise._meta.db_table, datasets=Dataset._meta.db_table, claims=WritingClaim._meta.db_table
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    claim.pk = row[0]
    claim._state.adding = False
    claim._state.db = "default"
    return claim


def renew_expired_claim(worker: Worker, claim_token: uuid.UUID | str) -> WritingClaim | None:
    """Hold an expired claim's premise for its worker again, if the premise is still free.

    For a worker whose time ran out while writing: their sentences can go to the same line.
    Returns the open claim, or None when the premise has gone to others, was set aside, or the
    worker holds another task now. Raises ClaimAlreadySubmitted for a claim already used.
    """
    now = timezone.now()
    with transaction.atomic():
        claim = WritingClaim.objects.select_for_update(of=("self",)).get(token=claim_token, worker=worker)
        if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
            raise ClaimAlreadySubmitted("These sentences were already saved.")
        if claim.status == ClaimStatus.OPEN and claim.expires_at > now:
            return claim
        other = WritingClaim.objects.filter(worker=worker, status=ClaimStatus.OPEN, expires_at__gt=now)
        if other.exclude(pk=claim.pk).exists():
            return None
        # The premise's row lock, as every claimer takes it, then a fresh count of its places.
        Premise.objects.select_for_update().filter(pk=claim.premise_id).first()
        claim.status = ClaimStatus.EXPIRED  # it holds no place while its room is counted
        claim.save(update_fields=["status"])
        if not _has_room(claim.premise_id, now):
            return None
        claim.status = ClaimStatus.OPEN
        claim.expires_at = now + timedelta(minutes=_claim_minutes())
        claim.save(update_fields=["status", "expires_at"])
        _count_claim(claim.premise_id)
        return claim


REOPEN_EXPIRED_WITHIN = timedelta(hours=24)


def reopen_expired_line(worker: Worker, *, study_session: StudySession | None = None) -> WritingClaim | None:
    """The worker's line whose hold ran out, held for them again when they come back for a task.

    Their typed sentences wait in the browser under that claim's token (static/js/worker.js): a
    new claim would show an empty page and the sentences would be lost. Only the latest claim of
    the same study visit that expired within a day, and only if its premise is still free
    (renew_expired_claim); otherwise None and the worker gets the next line as usual.
    """
    now = timezone.now()
    latest = (
        WritingClaim.objects.filter(
            worker=worker, study_session=study_session, created_at__gte=now - REOPEN_EXPIRED_WITHIN
        )
        .order_by("-created_at")
        .first()
    )
    if latest is None or latest.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
        return None
    if latest.status == ClaimStatus.OPEN and latest.expires_at > now:
        return None  # still open: claim_next_premise returns it as it always has
    try:
        return renew_expired_claim(worker, latest.token)
    except ClaimAlreadySubmitted:
        return None


def claim_next_premise(
    worker: Worker, *, dataset: Dataset | None = None, study_session: StudySession | None = None
) -> WritingClaim | None:
    """Hold the next premise for `worker` and return the WritingClaim, or None when none is left.

    A study session's dataset wins over the default collection.
    """
    if dataset is None and study_session is not None:
        dataset = study_session.study.dataset
    try:
        return _claim_once(worker, dataset, study_session)
    except IntegrityError:
        # The same worker asked twice at once (two tabs, a double click): the unique
        # constraints kept one claim; hand that one back.
        return _claim_once(worker, dataset, study_session)


# --- the rules a writing task counts by -----------------------------------------------------------


@dataclass(frozen=True)
class TaskRules:
    """What a problem report does and what a hypothesis must be (a study's, else these defaults).

    reports_to_hold_premise: reports by distinct workers after which a premise is held.
    max_reports_per_batch: reports one worker may send in one study visit (or, outside a study,
        unresolved reports at a time).
    min_hypothesis_words: words (runs of word characters with a letter) a hypothesis needs.
    max_hypothesis_chars / max_report_chars: length limits, shown with a live counter.
    """

    reports_to_hold_premise: int = 2
    max_reports_per_batch: int = 2
    min_hypothesis_words: int = 3
    max_hypothesis_sentences: int = 1
    max_hypothesis_chars: int = 500
    max_report_chars: int = 500


def task_rules(*, study_session: StudySession | None = None) -> TaskRules:
    limits: dict[str, int] = {
        "max_hypothesis_chars": settings.NLI["MAX_HYPOTHESIS_CHARS"],
        "max_report_chars": settings.NLI.get("MAX_REPORT_CHARS", 500),
    }
    if study_session is None:
        return TaskRules(**limits)
    study = study_session.study
    return TaskRules(
        reports_to_hold_premise=max(1, study.reports_to_hold_premise),
        max_reports_per_batch=study.max_reports_per_batch,
        min_hypothesis_words=max(1, study.min_hypothesis_words),
        max_hypothesis_sentences=max(1, study.max_hypothesis_sentences),
        **limits,
    )


def _reports_of(in_study: Hashable, values: Mapping[str, Any]) -> QuerySet[Any]:
    reports = PremiseReport.objects.filter(worker_id=values["worker"])
    if in_study:
        reports = reports.filter(study_session_id=values["session"])
    else:
        reports = reports.filter(study_session__isnull=True, resolved=False)
    return reports.order_by().values("worker_id").annotate(n=Count("pk")).values_list("n")


# Read on every writing page and submit: compiled once per case (annotation_site.compiled_queries).
REPORTS_SENT = CompiledQuery(_reports_of, prepare=True)


def reports_sent(worker: Worker, study_session: StudySession | None) -> int:
    """The reports that count against the worker's cap: this visit's, or (outside a study) the unresolved ones."""
    if study_session is not None:
        rows = REPORTS_SENT.fetch(True, worker=worker.pk, session=study_session.pk)
    else:
        rows = REPORTS_SENT.fetch(False, worker=worker.pk)
    return int(rows[0][0]) if rows else 0


def reports_left(worker: Worker, study_session: StudySession | None, *, rules: TaskRules | None = None) -> int:
    rules = rules or task_rules(study_session=study_session)
    return max(0, rules.max_reports_per_batch - reports_sent(worker, study_session))


def report_cap_message(rules: TaskRules) -> str:
    return (
        f"You have sent {rules.max_reports_per_batch} problem report{'s' if rules.max_reports_per_batch != 1 else ''}"
        " in this batch, the most a batch takes. Please write the three sentences for this line; "
        "if it really cannot be written about, do your best and a researcher will see it in review."
    )


# Characters a reader cannot see: zero-width spaces and joiners, bidi marks, soft hyphens (Unicode
# category C*), and letters that render as blanks (Hangul fillers, the blank Braille pattern).
_BLANK_LETTERS = frozenset("\u115f\u1160\u3164\uffa0\u2800")
_WORD = re.compile(r"\w+")


def visible_text(text: str | None) -> str:
    """Text with invisible and control characters removed and whitespace runs made one space."""
    kept = []
    for char in text or "":
        if char.isspace():
            kept.append(" ")
        elif unicodedata.category(char)[0] == "C" or char in _BLANK_LETTERS:
            continue
        else:
            kept.append(char)
    return " ".join("".join(kept).split())


def word_count(text: str) -> int:
    """Words: runs of word characters that hold at least one letter ("3" and "_" are not words)."""
    return sum(1 for word in _WORD.findall(text) if any(char.isalpha() for char in word))


def word_characters(text: str) -> int:
    return sum(len(word) for word in _WORD.findall(text))


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

_PUNCTUATION = re.compile(f"[{re.escape(string.punctuation)}“”‘’«»…–—]")


def normalised(text: str) -> str:
    """Text as compared for sameness: case, whitespace and punctuation do not count."""
    return " ".join(_PUNCTUATION.sub(" ", text).lower().split())


def hypothesis_errors(
    premise_text: str,
    hypotheses: Mapping[Label, str | None],
    *,
    problem_report: str | None = "",
    rules: TaskRules | None = None,
) -> dict[str, str]:
    """Field name -> message for every rule the three hypotheses break (empty dict when fine).

    `hypotheses` maps Label -> text; texts are judged as `visible_text` leaves them (what the
    reader sees). A worker who only reports a problem (all three empty, report filled in)
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
        if problem := hypothesis_problem(premise_text, text, rules, others=written, named=seen):
            errors[name] = problem
        else:
            seen[normalised(text)] = FIELD_SHORT_NAMES[label]
        written.append(text)
    return errors


# Markup a hypothesis is not: HTML/XML tags and entities, Markdown links, images and code, URLs.
MARKUP = re.compile(
    r"<\s*/?\s*[A-Za-z!][^>]*>"  # <b>, </p>, <!-- -->, <script ...>
    r"|&(?:[A-Za-z]+|#\d+|#x[0-9A-Fa-f]+);"  # &amp; &#39;
    r"|!?\[[^\]]*\]\([^)]*\)"  # [text](url), ![alt](src)
    r"|```|`[^`\s][^`]*`"  # code (a lone backtick is a typo for an apostrophe: SNLI has two)
    r"|\b(?:https?://|www\.)\S"  # links
)


def hypothesis_problem(
    premise_text: str,
    text: str,
    rules: TaskRules,
    *,
    others: Iterable[str] = (),
    named: Mapping[str, str] | None = None,
) -> str | None:
    """Why one hypothesis (as `visible_text` leaves it) is not writing (a message for the worker), or
    None. These are the writing rules of every task that creates a hypothesis (the writing task's
    three boxes, each adversarial try): what one task refuses, no other task takes (issue 39).

    `others`: the worker's other sentences this one must differ from; `named`: those of them by
    their `normalised` text, with the name the message gives them."""
    key = normalised(text)
    if not text:
        return "Please write a sentence here."
    if len(text) > rules.max_hypothesis_chars:
        return f"Please keep this under {rules.max_hypothesis_chars} characters (it has {len(text)})."
    if not key or word_characters(text) < 2:
        return "Please write a sentence in words, not only punctuation or symbols."
    if MARKUP.search(text):
        return "Please write plain words: markup such as HTML tags, links or code is not taken."
    if word_count(text) < rules.min_hypothesis_words:
        return f"Please write a whole sentence of at least {rules.min_hypothesis_words} words."
    sentences = len(split_sentences(text))
    if sentences > rules.max_hypothesis_sentences:
        most = "one sentence" if rules.max_hypothesis_sentences == 1 else f"{rules.max_hypothesis_sentences} sentences"
        return f"Please write {most}, not a paragraph (this has {sentences})."
    if key == normalised(premise_text):
        return "This repeats the line above. Please write a new sentence."
    if named and key in named:
        return f"This is the same as your '{named[key]}' sentence. Each of the three must differ."
    return writing_problem(premise_text, text, others=others)


def _pair_id(premise: Premise, writing_number: int, label: Label) -> str:
    # The first writing keeps MultiNLI's form ("31193n"); later writings of the same premise
    # add their number ("31193n2") so pairIDs stay unique within the dataset.
    suffix = "" if writing_number == 1 else str(writing_number)
    return f"{premise.prompt_id}{PAIR_ID_LETTER[label]}{suffix}"


def create_written_pairs(premise: Premise, author: Worker, texts: Mapping[Label, str]) -> list[Pair]:
    """One writing's three pairs, each with its author's label at position 1 and its counters.

    `texts` maps each label to its hypothesis. Runs inside the caller's transaction, which also
    moves `premise.writings_done`.
    """
    writing_number = premise.writings_done + 1
    pairs = [
        Pair(
            premise=premise,
            pair_id=_pair_id(premise, writing_number, label),
            hypothesis=texts[label],
            author_label=label,
            author=author,
        )
        for label in HYPOTHESIS_FIELDS
    ]
    created: list[Pair] = create_pairs(premise.dataset, premise.split, pairs, [[label] for label in HYPOTHESIS_FIELDS])
    return created


# Read on every writing submit: compiled once (annotation_site.compiled_queries).
LOCKED_CLAIM = CompiledQuery(
    lambda _, values: (
        WritingClaim.objects.select_for_update(of=("self",))
        .select_related("premise__dataset", "study_session__study")
        .filter(token=values["token"], worker_id=values["worker"])
        .order_by()
    ),
    prepare=True,
)
LOCKED_PREMISE = CompiledQuery(
    lambda _, values: (
        Premise.objects.select_for_update(of=("self",))
        .select_related("dataset")
        .filter(pk=values["premise"])
        .order_by()
    ),
    prepare=True,
)


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
    """Save a worker's three hypotheses (and/or their problem report) for one claim.

    One transaction: three pairs with their author labels, the premise's writing count, the
    claim's status and the study session's task count move together or not at all.

    A problem report is recorded; once workers of `rules.reports_to_hold_premise` distinct
    accounts have reported the premise, it is held for a researcher (served to nobody else). A
    worker's reports are capped per study visit (`rules.max_reports_per_batch`). If the three
    hypotheses are filled in they are saved as well and the task counts towards the completion
    code; a report alone releases the claim, saves nothing else and does not count: a batch
    completes only with written tasks.

    `typing_evidence` is the page's record of how the sentences were typed (authorship app): stored
    beside each pair; a study that refuses pasted text refuses the fields it marks.

    Raises ValidationError (keyed by field) for bad text, ClaimExpired, ClaimAlreadySubmitted,
    and WritingClaim.DoesNotExist when the token is not this worker's.
    """
    texts = {
        Label.ENTAILMENT: visible_text(entailment),
        Label.NEUTRAL: visible_text(neutral),
        Label.CONTRADICTION: visible_text(contradiction),
    }
    report_text = visible_text(problem_report)
    with transaction.atomic():
        # The row lock makes a second submit of the same token wait, then see "submitted".
        token = as_uuid(claim_token)
        claims = [] if token is None else LOCKED_CLAIM.objects(None, token=token, worker=worker.pk)
        if not claims:
            raise WritingClaim.DoesNotExist("No writing claim of this worker has this token.")
        claim = claims[0]
        if claim.status in (ClaimStatus.SUBMITTED, ClaimStatus.RELEASED):
            raise ClaimAlreadySubmitted("These sentences were already saved.")
        # The premise's row only: its dataset's row stays unlocked (the pairs' inserts take a key
        # share lock on it, which a FOR UPDATE of it would make every writer of the dataset wait for).
        (premise,) = LOCKED_PREMISE.objects(None, premise=claim.premise_id)
        # The clock is read under the premise's lock: a claim that took this place after it
        # expired committed before we got the lock, so this reading is past the expiry too.
        now = timezone.now()
        if claim.status == ClaimStatus.EXPIRED or claim.expires_at <= now:
            # Left open here; the worker's next claim marks it expired (this transaction rolls back).
            raise ClaimExpired("This task expired before it was sent.")
        study_session = claim.study_session
        rules = task_rules(study_session=study_session)
        errors = hypothesis_errors(premise.text, texts, problem_report=report_text, rules=rules)
        errors.update(
            refused_fields(
                study_session, typing_evidence, {HYPOTHESIS_FIELDS[label]: text for label, text in texts.items()}
            )
        )
        if report_text:
            if study_session is not None:
                # The visit's row lock: two reports of one visit are counted one after the other.
                StudySession.objects.select_for_update().filter(pk=study_session.pk).first()
            errors.update(report_errors(report_text, rules, reports_already=reports_sent(worker, study_session)))
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
            record_writing_evidence(worker, study_session, typing_evidence, written)
            hypothesis_tally.written(study_session, premise, len(result.pairs))  # the cost page's count
            premise.writings_done += 1
            if settings.ARTIFACTS_ON_ARRIVAL:  # phenomenon tags and the artifact monitor, by task name
                transaction.on_commit(
                    lambda: enqueue_coalesced(
                        ARRIVAL_TASK, premise.dataset_id, seconds=settings.ARTIFACTS_ARRIVAL_COALESCE_SECONDS
                    )
                )
            claim.status = ClaimStatus.SUBMITTED
        else:
            # Only the report: the premise goes back to the pool (unless now held) and the task
            # does not count towards the completion code; the worker is offered another.
            claim.status = ClaimStatus.RELEASED
        premise.save(update_fields=["status", "writings_done"])
        claim.submitted_at = now
        claim.save(update_fields=["status", "submitted_at"])
        if result.pairs:
            record_task_done(study_session, hold_reason=first_hold_reason(hold_code_of_guesser, hold_code_of_typist))
    return result


# --- the premise pool, for researchers ---------------------------------------------------------


@transaction.atomic
def hold_premises(premises: QuerySet[Premise]) -> int:
    """No new writing tasks for these premises until a researcher releases them."""
    return (
        Premise.objects.filter(pk__in=premises.values("pk"))
        .exclude(status=PremiseStatus.HELD)
        .update(status=PremiseStatus.HELD)
    )


@transaction.atomic
def release_premises(premises: QuerySet[Premise]) -> tuple[int, int]:
    """Back into the writing pool; their open reports count as dealt with. Returns (released, resolved)."""
    ids = list(premises.values_list("pk", flat=True))
    released = Premise.objects.filter(pk__in=ids, status=PremiseStatus.HELD).update(status=PremiseStatus.AVAILABLE)
    resolved = PremiseReport.objects.filter(premise_id__in=ids, resolved=False).update(resolved=True)
    return released, resolved


@transaction.atomic
def retire_premises(premises: QuerySet[Premise]) -> tuple[int, int]:
    """Out of the writing pool for good (a broken sentence); their open reports count as dealt with."""
    ids = list(premises.values_list("pk", flat=True))
    retired = (
        Premise.objects.filter(pk__in=ids).exclude(status=PremiseStatus.RETIRED).update(status=PremiseStatus.RETIRED)
    )
    resolved = PremiseReport.objects.filter(premise_id__in=ids, resolved=False).update(resolved=True)
    return retired, resolved


class PremiseEditRefused(ValidationError):
    """An edit of a premise's text that would corrupt data; the message says why."""


@transaction.atomic
def edit_premise_text(premise: Premise, text: str | None) -> Premise:
    """Correct a reported premise's text and put it back in the pool, its reports resolved.

    Refused once pairs exist: their hypotheses were written against the old text.
    """
    premise = Premise.objects.select_for_update().get(pk=premise.pk)
    text = " ".join((text or "").split())
    if not text:
        raise PremiseEditRefused({"text": "The premise cannot be empty."})
    if premise.pairs.exists():
        raise PremiseEditRefused(
            {"text": f"{premise.pairs.count()} pair(s) were written against the old text; retire this premise instead."}
        )
    premise.text = text
    premise.status = PremiseStatus.AVAILABLE
    premise.save(update_fields=["text", "text_hash", "status"])
    PremiseReport.objects.filter(premise=premise, resolved=False).update(resolved=True)
    return premise
