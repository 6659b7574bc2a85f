"""The premise pool, for researchers: holding, releasing, retiring and correcting premises, each
decision in its team's audit log."""

from collections import Counter
from collections.abc import Sequence
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import QuerySet

from audit import services as audit
from corpus.models import Premise, PremiseStatus

from .models import PremiseReport

# A bulk decision's entry names at most this many premises by prompt id (and counts them all).
PREMISES_NAMED_IN_AUDIT = 100


def _locked_premises(premises: QuerySet[Premise]) -> list[dict[str, Any]]:
    """The premises a decision acts on, locked until its transaction ends (in id order, so two
    decisions on the same premises never deadlock), with what their audit entry names."""
    rows = (
        # NO KEY: a writing claim's insert key-shares the premise (`collection.writing_claims`).
        Premise.objects.select_for_update(no_key=True, of=("self",))
        .filter(pk__in=premises.values("pk"))
        .order_by("pk")
        .values("pk", "prompt_id", "status", "dataset__slug", "dataset__team_id")
    )
    return [dict(row) for row in rows]


def _record_premise_decision(
    action: str, rows: Sequence[dict[str, Any]], actor: Any, new_status: str, changed: int, resolved: int
) -> None:
    """One audit entry per team for a researcher's decision on premises (release, retire, hold), in
    the caller's transaction: which premises, their statuses before, how many changed."""
    by_team: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        by_team.setdefault(row["dataset__team_id"], []).append(row)
    for team_id, team_rows in sorted(by_team.items()):
        only = team_rows[0] if len(team_rows) == 1 else None
        before = dict(Counter(row["status"] for row in team_rows))
        audit.record(
            action,
            actor=actor,
            subject_type=Premise._meta.label_lower,
            subject_id=only["pk"] if only else "",
            subject_label=f"premise {only['prompt_id']}" if only else f"{len(team_rows)} premises",
            team_id=team_id,
            before={"statuses": before},
            after={
                "status": new_status,
                "premises": [row["prompt_id"] for row in team_rows[:PREMISES_NAMED_IN_AUDIT]],
                "count": len(team_rows),
                # Across the whole decision: a bulk action over several teams is rare, one count is plenty.
                "changed": changed,
                "reports_resolved": resolved,
            },
            datasets={row["dataset__slug"] for row in team_rows},
        )


@transaction.atomic
def hold_premises(premises: QuerySet[Premise], *, actor: Any = None) -> int:
    """No new writing tasks for these premises until a researcher releases them."""
    rows = _locked_premises(premises)
    held = (
        Premise.objects.filter(pk__in=[row["pk"] for row in rows])
        .exclude(status=PremiseStatus.HELD)
        .update(status=PremiseStatus.HELD)
    )
    _record_premise_decision("premise.held", rows, actor, PremiseStatus.HELD, held, 0)
    return held


@transaction.atomic
def release_premises(premises: QuerySet[Premise], *, actor: Any = None) -> tuple[int, int]:
    """Back into the writing pool; their open reports count as dealt with. Returns (released, resolved)."""
    rows = _locked_premises(premises)
    ids = [row["pk"] for row in rows]
    released = Premise.objects.filter(pk__in=ids, status=PremiseStatus.HELD).update(status=PremiseStatus.AVAILABLE)
    resolved = PremiseReport.objects.filter(premise_id__in=ids, resolved=False).update(resolved=True)
    _record_premise_decision("premise.released", rows, actor, PremiseStatus.AVAILABLE, released, resolved)
    return released, resolved


@transaction.atomic
def retire_premises(premises: QuerySet[Premise], *, actor: Any = None) -> tuple[int, int]:
    """Out of the writing pool for good (a broken sentence); their open reports count as dealt with."""
    rows = _locked_premises(premises)
    ids = [row["pk"] for row in rows]
    retired = (
        Premise.objects.filter(pk__in=ids).exclude(status=PremiseStatus.RETIRED).update(status=PremiseStatus.RETIRED)
    )
    resolved = PremiseReport.objects.filter(premise_id__in=ids, resolved=False).update(resolved=True)
    _record_premise_decision("premise.retired", rows, actor, PremiseStatus.RETIRED, retired, resolved)
    return retired, resolved


class PremiseEditRefused(ValidationError):
    """An edit of a premise's text that would corrupt data; the message says why."""


@transaction.atomic
def edit_premise_text(premise: Premise, text: str | None, *, actor: Any = None) -> Premise:
    """Correct a reported premise's text and put it back in the pool, its reports resolved; the old
    and new text are in its team's audit log. Refused once pairs exist: their hypotheses were written
    against the old text."""
    premise = Premise.objects.select_for_update(no_key=True, of=("self",)).select_related("dataset").get(pk=premise.pk)
    before = {"text": premise.text, "status": premise.status}
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
    resolved = PremiseReport.objects.filter(premise=premise, resolved=False).update(resolved=True)
    audit.record(
        "premise.edited",
        actor=actor,
        subject=premise,
        subject_label=f"premise {premise.prompt_id}",
        team_id=premise.dataset.team_id,
        before=before,
        after={"text": premise.text, "status": premise.status, "reports_resolved": resolved},
        datasets=[premise.dataset.slug],
    )
    return premise
