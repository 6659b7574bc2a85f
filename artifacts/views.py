"""Artifact-aware writing: score a draft hypothesis (JSON), record what the note did.

Both are for a logged-in worker on the writing page. Scoring reads the monitor's model kept in
memory (`monitoring.cached_scoring_model`: numpy arrays, never spaCy or torch) and the page's
nudge settings from the cache: past the session and user of authentication it queries nothing,
and answers in about a millisecond (`bench/artifacts.py nudge`, against gunicorn).
"""

import json
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, JsonResponse
from django.utils import timezone
from django.views.decorators.http import require_POST

from base.authenticated import AuthenticatedRequest, is_authenticated
from corpus.labels import LABELS
from corpus.models import Dataset, Worker
from crowd.arrival import SESSION_KEY, current_study_session
from crowd.models import ClaimStatus, Study, TaskKind
from crowd.services import worker_for_user

from .models import NudgeRecord, StudyNudge
from .monitoring import cached_scoring_model

MAX_DRAFT = 1000
DEFAULT_THRESHOLD = 0.8
# Drafts scored per writing claim: three sentences revised many times over, not a labelling service
# (answering anyone without a limit, the model's top label would label other people's pairs).
SCORES_PER_CLAIM = 90


def _error(message: str, status: int = 400) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def nudge_settings(request: HttpRequest, dataset_slug: str | None) -> tuple[bool, float, Study | None, Dataset | None]:
    """(enabled, threshold, study, dataset) for this page: the study the worker came with
    decides; writing outside a study follows settings.ARTIFACTS_NUDGE_OUTSIDE_STUDIES."""
    session = current_study_session(request, task_kind=TaskKind.WRITING)
    if session is not None:
        study = session.study
        nudge = StudyNudge.objects.filter(study=study).first()
        return (bool(nudge and nudge.enabled), nudge.threshold if nudge else DEFAULT_THRESHOLD, study, study.dataset)
    dataset = Dataset.objects.filter(slug=dataset_slug).first() if dataset_slug else None
    return settings.ARTIFACTS_NUDGE_OUTSIDE_STUDIES, DEFAULT_THRESHOLD, None, dataset


NUDGE_VERSION_KEY = "artifacts:nudge-version"
NUDGE_TTL = 60  # seconds; the bound on staleness where each process has its own cache


def bump_nudge_version(**kwargs: object) -> None:
    """A study or its nudge switch changed: every cached nudge context is stale (signals)."""
    try:
        cache.incr(NUDGE_VERSION_KEY)
    except ValueError:
        cache.set(NUDGE_VERSION_KEY, 1, None)


def nudge_context(request: HttpRequest, dataset_slug: str | None) -> tuple[bool, float, int | None]:
    """(enabled, threshold, dataset id) for the scoring endpoint: `nudge_settings` computed once
    per worker, study session and dataset, then read from the cache with the settings' version in
    one round trip (no query), until a study or its StudyNudge is saved (which bumps the version)
    or NUDGE_TTL passes."""
    key = f"artifacts:nudge:{request.user.pk}:{request.session.get(SESSION_KEY) or ''}:{dataset_slug or ''}"
    found = cache.get_many([key, NUDGE_VERSION_KEY])
    version = found.get(NUDGE_VERSION_KEY, 0)
    cached = found.get(key)
    if cached is not None and cached[0] == version:
        hit: tuple[bool, float, int | None] = cached[1:]
        return hit
    enabled, threshold, _, dataset = nudge_settings(request, dataset_slug)
    context = (enabled, threshold, dataset.pk if dataset else None)
    cache.set(key, (version, *context), NUDGE_TTL)
    return context


def live_writing_claim_expiry(request: AuthenticatedRequest, token: object) -> float | None:
    """When the logged-in worker's open writing claim `token` expires (a timestamp), or None when
    they hold no such live claim. Read once, then from the cache until at most NUDGE_TTL later, so
    the hot path stays free of queries. The claim is read through the worker's `writing_claims`
    (the writing task's claims; this app may not import that one)."""
    if not isinstance(token, str) or not 0 < len(token) <= 64:
        return None
    key = f"artifacts:claim:{request.user.pk}:{token}"
    expires = cache.get(key)
    if expires is None:
        try:
            found = (
                Worker.objects.filter(
                    user=request.user, writing_claims__token=token, writing_claims__status=ClaimStatus.OPEN
                )
                .values_list("writing_claims__expires_at", flat=True)
                .first()
            )
        except (ValueError, TypeError, ValidationError):  # not a UUID
            found = None
        expires = found.timestamp() if found else 0
        cache.set(key, expires, NUDGE_TTL)
    return expires if expires > timezone.now().timestamp() else None


def _within_claim_limit(token: object) -> bool:
    key = f"artifacts:scores:{token}"
    if cache.add(key, 1, 24 * 3600):
        return True
    try:
        return cache.incr(key) <= SCORES_PER_CLAIM
    except ValueError:  # expired between add and incr
        return cache.add(key, 1, 24 * 3600)


def _body(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body or b"{}")
    except (ValueError, UnicodeDecodeError):
        return None


@require_POST
def score_draft(request: HttpRequest) -> JsonResponse:
    """{"text", "label", "dataset", "claim"} → whether the label is guessable from the text alone,
    and the words that give it away.

    Answers only a writer holding the live writing claim `claim` (the page's token), at most
    SCORES_PER_CLAIM times per claim, and never the model's probability: it is a nudge for the
    writer's own draft, not an oracle for labelling someone else's pair.
    """
    if not is_authenticated(request):
        return _error("Log in to write.", status=403)
    body = _body(request)
    if not isinstance(body, dict):
        return _error("The body must be a JSON object.")
    text, label = str(body.get("text") or "")[:MAX_DRAFT], body.get("label")
    if label not in LABELS:
        return _error(f"label must be one of {', '.join(LABELS)}")
    claim = body.get("claim")
    if live_writing_claim_expiry(request, claim) is None:
        return _error("The note on drafts is for the writing task you hold open.", status=403)
    if not _within_claim_limit(claim):
        return JsonResponse({"enabled": False, "guessable": False, "limited": True}, status=429)
    dataset_slug = body.get("dataset")
    enabled, threshold, dataset_id = nudge_context(request, dataset_slug if isinstance(dataset_slug, str) else None)
    if not enabled:
        return JsonResponse({"enabled": False, "guessable": False})
    refresh_id, model = cached_scoring_model(dataset_id)
    if model is None or not text.strip():
        return JsonResponse({"enabled": True, "guessable": False, "ready": model is not None})
    scored = model.score(text)
    p = scored["probabilities"][label]
    words = scored["words"][label]
    guessable = scored["predicted"] == label and p >= threshold and bool(words)
    return JsonResponse(
        {
            "enabled": True,
            "ready": True,
            "guessable": guessable,
            "words": words if guessable else [],
            "refresh": refresh_id,
        }
    )


def _records_problem(records: list[Any]) -> str | None:
    """What is wrong with the records' types, or None: the text a string, the words a list of
    strings, no NUL (PostgreSQL text cannot hold it) and no lone surrogate (nor can UTF-8)."""
    for number, record in enumerate(records, 1):
        if not isinstance(record, dict):
            continue  # skipped below, as a record without a label is
        text, words = record.get("text"), record.get("words")
        if text is not None and not isinstance(text, str):
            return f"record {number}: text must be a string."
        if words is not None and not (isinstance(words, list) and all(isinstance(w, str) for w in words)):
            return f"record {number}: words must be a list of strings."
        for value in [text or "", *(words or [])]:
            if "\x00" in value:
                return f"record {number} contains a NUL character."
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                return f"record {number} contains a lone surrogate (not UTF-8)."
    return None


@require_POST
def record_nudges(request: HttpRequest) -> JsonResponse:
    """The writing form was submitted: per hypothesis, whether a note was shown and whether the
    worker revised it. Sent as form data (navigator.sendBeacon) with the CSRF token and a JSON
    field `records`: [{"label", "text", "shown", "revised", "words"}]."""
    if not is_authenticated(request):
        return _error("Log in to write.", status=403)
    try:
        records = json.loads(request.POST.get("records") or "[]")
    except ValueError:
        return _error("records must be a JSON list.")
    if not isinstance(records, list) or len(records) > len(LABELS):
        return _error("records must be a list of at most three hypotheses.")
    problem = _records_problem(records)
    if problem:
        return _error(problem)
    enabled, _, study, dataset = nudge_settings(request, request.POST.get("dataset"))
    worker = worker_for_user(request.user)
    rows = []
    for record in records:
        if (
            not isinstance(record, dict)
            or record.get("label") not in LABELS
            or not str(record.get("text") or "").strip()
        ):
            continue
        rows.append(
            NudgeRecord(
                worker=worker,
                study=study,
                dataset=dataset,
                claim_token=str(request.POST.get("claim") or "")[:64],
                label=record["label"],
                hypothesis=str(record["text"]).strip(),
                enabled=enabled,
                shown=bool(record.get("shown")) and enabled,
                revised=bool(record.get("revised")) and enabled,
                shown_words=[str(w)[:50] for w in (record.get("words") or [])][:10],
            )
        )
    with transaction.atomic():
        claim = str(request.POST.get("claim") or "")[:64]
        if claim:  # a form sent again after an error: its latest record stands
            NudgeRecord.objects.filter(worker=worker, claim_token=claim, label__in=[r.label for r in rows]).delete()
        NudgeRecord.objects.bulk_create(rows)
    return JsonResponse({"recorded": len(rows)})
