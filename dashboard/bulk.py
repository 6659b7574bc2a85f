"""The pair browser's bulk actions: each takes exactly the pairs its page counted, is one batch in
one transaction with its record (`PairBulkAction`), and any of them, not only the last, is undone
from the history."""

from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils import timezone

from corpus.models import Pair
from modeling.snapshots import services as snapshot_services
from teams import access
from validation import adjudication

from .models import BulkActionKind, PairBulkAction


class BulkActionRefused(Exception):
    """Nothing was changed, and why (for the page)."""


@dataclass(frozen=True)
class BulkDone:
    action: PairBulkAction
    unchanged: int


def act_on_pairs(
    kind: str, pairs: QuerySet[Pair], *, expected: int, actor: Any, reason: str, described: str
) -> BulkDone:
    """Only when `pairs` are still the `expected` number the page showed: else nothing changes."""
    if kind not in BulkActionKind.values:
        raise BulkActionRefused("Choose an action; nothing was changed.")
    with transaction.atomic():
        found = pairs.order_by().count()
        if found != expected:
            raise BulkActionRefused(
                f"The filters now match {found} pairs, not the {expected} this page counted: nothing was changed. "
                "Look at the pairs again before you act on them."
            )
        team_ids = sorted(set(pairs.order_by().values_list("dataset__team_id", flat=True).distinct()))
        if kind == BulkActionKind.RETIRE:
            changed, token = adjudication.retire_pairs(pairs, researcher=actor, reason=reason)
            unchanged = found - changed
        elif kind == BulkActionKind.ADJUDICATE:
            changed, unchanged, token = adjudication.send_to_adjudication(pairs, researcher=actor, reason=reason)
        else:
            changed, unchanged, token = snapshot_services.exclude_from_snapshots(pairs, researcher=actor, reason=reason)
        record = PairBulkAction.objects.create(
            token=token, kind=kind, actor=actor, described=described[:300], reason=reason[:100], changed=changed
        )
        record.teams.set(team_ids)
    return BulkDone(record, unchanged)


def undo_bulk_action(token: str, *, actor: Any) -> PairBulkAction:
    """Undo one bulk action of the history (the pairs decided since keep that decision): its record,
    with how many were undone. An action of a team where the actor may not do research, or one
    undone already, is refused."""
    with transaction.atomic():
        record = PairBulkAction.objects.select_for_update().filter(token=token).first()
        teams = list(record.teams.values_list("pk", flat=True)) if record else []
        if record is None or not teams or not all(access.may(actor, team, access.RESEARCH) for team in teams):
            raise BulkActionRefused("No such bulk action of your team; nothing was changed.")
        if record.undone_at is not None:
            raise BulkActionRefused("That bulk action was undone already; nothing was changed.")
        if record.kind == BulkActionKind.ADJUDICATE:
            undone = adjudication.unsend(token, researcher=actor)
        elif record.kind == BulkActionKind.EXCLUDE:
            undone = snapshot_services.include_again(token, researcher=actor)
        else:
            undone = adjudication.undo_bulk(token, researcher=actor)
        record.undone_at, record.undone_by, record.undone_count = timezone.now(), actor, undone
        record.save(update_fields=["undone_at", "undone_by", "undone_count"])
    return record
