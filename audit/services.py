"""`record`: the one way an entry enters the audit log. Services call it inside the transaction
of the action they record, so an action and its entry are stored together or not at all."""

from collections.abc import Iterable
from typing import Any

from django.db import models

from .models import AuditEntry


def _plain(value: Any) -> Any:
    """A value as JSON keeps it (decimals, dates and the like as text)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, dict):
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [_plain(item) for item in value]
    if isinstance(value, models.Model):
        return value.pk
    return str(value)


def record(
    action: str,
    *,
    actor: Any = None,
    subject: models.Model | None = None,
    subject_type: str = "",
    subject_id: Any = "",
    subject_label: str = "",
    team_id: int | None = None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    reason: str = "",
    datasets: Iterable[str] = (),
) -> AuditEntry:
    """Append one entry: `actor` (a user or None for the system) did `action` to `subject` (a row,
    or its type/id/label), with the fields that changed `before` and `after`, and why."""
    if subject is not None:
        subject_type = subject_type or subject._meta.label_lower
        subject_id = subject_id or subject.pk
        subject_label = subject_label or str(subject)
    real_actor = actor if actor is not None and getattr(actor, "is_authenticated", False) else None
    return AuditEntry.objects.create(
        team_id=team_id,
        actor_id=real_actor.pk if real_actor else None,
        actor=real_actor.get_username() if real_actor else "",
        action=action,
        subject_type=subject_type,
        subject_id=str(subject_id)[:64],
        subject=subject_label[:200],
        before=_plain(before or {}),
        after=_plain(after or {}),
        reason=reason,
        dataset_slugs=sorted(set(datasets)),
    )


def record_batch(
    action: str,
    rows: models.QuerySet[Any],
    *,
    actor: Any,
    reason: str,
    token: str,
    team: str = "dataset__team_id",
    dataset: str = "dataset__slug",
) -> None:
    """One entry per team for a bulk action on `rows` (e.g. the pair browser's "send these pairs to
    adjudication"): how many of its rows, of which datasets, and the batch token its undo takes.
    `team` and `dataset` are the rows' paths to their team id and dataset slug."""
    by_team: dict[int | None, tuple[int, set[str]]] = {}
    for team_id, slug, count in rows.order_by().values_list(team, dataset).annotate(n=models.Count("pk")):
        total, slugs = by_team.get(team_id, (0, set()))
        by_team[team_id] = (total + count, slugs | {slug})
    label = rows.model._meta.label_lower
    for team_id, (count, slugs) in sorted(by_team.items(), key=lambda item: item[0] or 0):
        record(
            action,
            actor=actor,
            subject_type=label,
            subject_id=token,
            subject_label=f"{count} rows (batch {token})",
            team_id=team_id,
            after={"rows": count, "batch": token},
            reason=reason,
            datasets=slugs,
        )


def changes(old: dict[str, Any], new: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The fields whose values differ, as (before, after)."""
    keys = [key for key in new if _plain(old.get(key)) != _plain(new.get(key))]
    return {key: old.get(key) for key in keys}, {key: new.get(key) for key in keys}
