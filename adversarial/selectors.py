"""Reads of the adversarial app: each round's figures (ANLI Table 2's columns) and the per-round
ANLI-style export (docs/adversarial.md)."""

import json
from collections.abc import Iterator
from typing import Any

from django.db.models import Count, Q

from corpus.labels import LABELS
from corpus.models import Split
from crowd.models import Study

from .models import AdversarialTask, AdversarialTry, Round, TaskState, Verification

# ANLI's files write labels as letters.
LABEL_LETTER = {"entailment": "e", "neutral": "n", "contradiction": "c"}
EXPORT_FIELDS = ("uid", "premise", "hypothesis", "label", "reason", "model_label", "round")


def _ratio(a: float, b: float) -> float | None:
    return round(a / b, 4) if b else None


def round_figures(round_: Round) -> dict[str, Any]:
    """Per round: tries per fooled example, the model error rate (fooled / tries, verified fooled /
    tries), time per verified example, the verified share, the verified label distribution and the
    next target's accuracy on this round's test set."""
    tries = AdversarialTry.objects.filter(round=round_)
    counts = tries.aggregate(
        tries=Count("pk"),
        fooled=Count("pk", filter=Q(model_fooled=True)),
        verified=Count("pk", filter=Q(verification=Verification.VERIFIED)),
        discarded=Count("pk", filter=Q(verification=Verification.DISCARDED)),
        pending=Count("pk", filter=Q(model_fooled=True, verification=Verification.PENDING)),
    )
    done = AdversarialTask.objects.filter(round=round_, state=TaskState.DONE)
    # A done task has its finish time (finished_at is nullable only for tasks still open).
    seconds = sum(
        (finished - created).total_seconds()
        for created, finished in done.values_list("created_at", "finished_at")
        if finished is not None
    )
    labels: dict[str, int] = dict(
        tries.filter(verification=Verification.VERIFIED).values_list("task__target_label").annotate(n=Count("pk"))
    )
    decided = counts["verified"] + counts["discarded"]
    return {
        "round": round_,
        **counts,
        "tasks": AdversarialTask.objects.filter(round=round_, state=TaskState.DONE).count(),
        "tries_per_fooled": _ratio(counts["tries"], counts["fooled"]),
        "model_error_rate": _ratio(counts["fooled"], counts["tries"]),
        "verified_error_rate": _ratio(counts["verified"], counts["tries"]),
        "seconds_per_verified": _ratio(seconds, counts["verified"]),
        "verified_share": _ratio(counts["verified"], decided),
        "label_distribution": {label: labels.get(label, 0) for label in LABELS},
        "next_test_accuracy": round_.next_test_accuracy,
        "next_test_examples": round_.next_test_examples,
    }


def study_rounds(study: Study) -> list[dict[str, Any]]:
    rounds = Round.objects.filter(study=study).select_related(
        "target_run", "round_snapshot", "training_snapshot", "next_run"
    )  # a closing round shows what it waits for: its snapshots' and the next run's status
    return [round_figures(r) for r in rounds.order_by("number")]


def export_rows(round_: Round) -> Iterator[tuple[str, dict[str, Any]]]:
    """ANLI-style rows of one round, (split, row) in try order. train: every try on a train premise
    except fooled ones the verifiers discarded; dev and test: verified fooled examples only. `label`
    is the writer's target label, `model_label` the target's prediction, as ANLI's letters."""
    tries = (
        AdversarialTry.objects.filter(round=round_)
        .select_related("task__writing_claim__premise", "round__study")
        .order_by("pk")
    )
    for attempt in tries:
        premise = attempt.task.writing_claim.premise
        if premise.split == Split.TRAIN:
            if attempt.verification == Verification.DISCARDED:
                continue
        elif not (attempt.model_fooled and attempt.verification == Verification.VERIFIED):
            continue
        yield (
            premise.split,
            {
                "uid": f"{round_.study.slug}-r{round_.number}-{attempt.pk}",
                "premise": premise.text,
                "hypothesis": attempt.hypothesis,
                "label": LABEL_LETTER[attempt.task.target_label],
                "reason": attempt.task.reason if attempt.model_fooled else "",
                "model_label": LABEL_LETTER.get(attempt.predicted_label, attempt.predicted_label),
                "round": round_.number,
                "split": premise.split,
                "model_fooled": attempt.model_fooled,
                "verification": attempt.verification or "not asked",
                "try": attempt.number,
                "prompt_id": premise.prompt_id,
            },
        )


def export_jsonl(round_: Round, split: str | None = None) -> Iterator[str]:
    """The round's rows as JSON lines (one split, or all with their `split` field)."""
    for row_split, row in export_rows(round_):
        if split is None or row_split == split:
            yield json.dumps(row, ensure_ascii=False) + "\n"
