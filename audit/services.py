"""`record`: the one way an entry enters the audit log. Services call it inside the transaction
of the action they record, so an action and its entry are stored together or not at all."""

from collections.abc import Iterable
from typing import Any

from django.db import connection, models, transaction

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


REDACTED = "[redacted]"
# The fields a redaction may rewrite: what an entry says. Which entry it is (id, time, team, action,
# subject type and id) the database keeps as it was (the trigger of migration 0002).
REDACTABLE_TEXT = ("actor", "subject", "reason")
REDACTABLE_JSON = ("before", "after")


def _without(value: Any, words: list[str]) -> Any:
    if isinstance(value, str):
        for word in words:
            value = value.replace(word, REDACTED)
        return value
    if isinstance(value, dict):
        return {_without(key, words): _without(item, words) for key, item in value.items()}
    if isinstance(value, list):
        return [_without(item, words) for item in value]
    return value


def redact(rows: models.QuerySet[AuditEntry], words: Iterable[str], *, actor: Any, reason: str) -> int:
    """Blank `words` (a person's name, id or email) wherever `rows` say them, for erasure of
    personal data; the entries stay, saying "[redacted]" where the words were. The one door through
    the log's append-only trigger: it opens it for this transaction's own statements only
    (`SET LOCAL audit.allow_redaction`) and shuts it again before returning. The redaction itself
    is recorded (how many entries, and why; not the words). Returns how many entries changed."""
    blanked = sorted({word for word in words if word.strip()}, key=len, reverse=True)
    if not blanked:
        raise ValueError("Name at least one word to redact.")
    if not reason.strip():
        raise ValueError("Say why the entries are redacted (e.g. the erasure request it answers).")
    changed = 0
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL audit.allow_redaction = on")
        for entry in rows.select_for_update():
            fields = {name: _without(getattr(entry, name), blanked) for name in REDACTABLE_TEXT + REDACTABLE_JSON}
            if any(fields[name] != getattr(entry, name) for name in fields):
                if fields["actor"] != entry.actor:
                    fields["actor_id"] = None
                AuditEntry.objects.filter(pk=entry.pk).update(**fields)
                changed += 1
        # Shut again for the rest of an enclosing transaction (a failure above needs nothing: the
        # rollback of this block undoes the SET LOCAL with the rest).
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL audit.allow_redaction = off")
        record(
            "audit.redacted",
            actor=actor,
            subject_type="audit.auditentry",
            subject_label=f"{changed} entries",
            after={"entries": changed},
            reason=reason,
        )
    return changed
