"""The grammaticality task (DNC Appendix B.4): workers read hypotheses on their own and mark each
as having no grammatical errors, minor issues or major issues. Snapshots can then leave out pairs
whose hypothesis most judges found to have major issues (filter `drop_ungrammatical`).

A dataset asks for it with `Dataset.grammaticality_judgments` (judgments wanted per hypothesis; 0:
no such task). A page is claimed as validation's batches are: the hypotheses with the fewest
judgments that the worker has neither written, judged nor been offered, locked and counted again
under the lock, so two judges are never both offered a hypothesis's last place. A submit counts
again under its pairs' locks, so a judgment past the number wanted is never added: a hypothesis
that filled meanwhile (an expired page's) is not kept, the rest of the page is.
"""

import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

from django.db import IntegrityError, transaction
from django.db.models import Count, F, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from corpus.models import Dataset, Grammaticality, GrammaticalityJudgment, Pair, Worker
from corpus.selectors import datasets_excluding, is_excluded_in
from crowd.claiming import FOREIGN_ITEMS_MESSAGE, ClaimRule, claim_batch, foreign_items
from crowd.models import ClaimStatus

from .batch_claims import ValidationRefused
from .models import GrammaticalityClaim

PAGE_SIZE = 5


def _judged_subquery() -> Coalesce:
    counted = (
        GrammaticalityJudgment.objects.filter(pair=OuterRef("pk")).order_by().values("pair").annotate(n=Count("id"))
    )
    return Coalesce(Subquery(counted.values("n"), output_field=IntegerField()), Value(0))


def _claimable(worker: Worker, now: datetime, dataset: Dataset | None = None) -> QuerySet[Pair]:
    pairs = Pair.objects.filter(dataset__grammaticality_judgments__gt=0)
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    return (
        pairs.exclude(author=worker)
        .exclude(dataset__in=datasets_excluding(worker))
        .exclude(pk__in=GrammaticalityJudgment.objects.filter(worker=worker).values("pair_id"))
        .exclude(pk__in=GrammaticalityClaim.objects.filter(worker=worker).values("pair_id"))
        .alias(judged=_judged_subquery(), held=GRAMMATICALITY_CLAIMS.held(now))
        .filter(judged__lt=F("dataset__grammaticality_judgments") - F("held"))
        .order_by("judged", "pk")
    )


def pairs_shown_again(worker: Worker, pks: Iterable[int]) -> list[Pair]:
    """These pairs, where this worker may still judge them (a refused page shown again)."""
    return list(
        Pair.objects.filter(pk__in=list(pks), dataset__grammaticality_judgments__gt=0)
        .exclude(author=worker)
        .exclude(grammaticality_judgments__worker=worker)
    )


class JudgmentsIncomplete(ValidationRefused):
    """A page sent with sentences unanswered: nothing saved; `missing` are their pair pks."""

    def __init__(self, message: str, missing: Iterable[int]) -> None:
        super().__init__(message)
        self.missing = list(missing)


def _room(locked: list[int], now: datetime) -> list[tuple[int, int, object]]:
    """Each locked hypothesis's free places: judgments wanted less judgments made and live claims."""
    counted = (
        Pair.objects.filter(pk__in=locked)
        .annotate(judged=_judged_subquery(), held=GRAMMATICALITY_CLAIMS.held(now))
        .values_list("pk", "dataset__grammaticality_judgments", "judged", "held")
    )
    return [(pk, wanted - judged - held, None) for pk, wanted, judged, held in counted]


GRAMMATICALITY_CLAIMS = ClaimRule(model=GrammaticalityClaim, target="pair", room=_room)


def claim_page(worker: Worker, *, dataset: Dataset | None = None, size: int = PAGE_SIZE) -> uuid.UUID | None:
    """The worker's open page of hypotheses (its claims' batch id), claiming a new one when they have
    none; None when nothing is left for them."""
    now = timezone.now()
    with transaction.atomic():
        return claim_batch(
            GRAMMATICALITY_CLAIMS, worker, now, _claimable(worker, now, dataset), size=size, wanted=size * 3
        )


def hypotheses_to_judge(worker: Worker, *, dataset: Dataset | None = None, size: int = PAGE_SIZE) -> list[Pair]:
    """The pairs of the worker's open page (claimed now if they have none), fewest judgments first;
    [] when nothing is left for them."""
    if dataset is not None and is_excluded_in(worker, dataset.team_id):
        return []
    batch = claim_page(worker, dataset=dataset, size=size)
    if batch is None:
        return []
    claimed = GrammaticalityClaim.objects.filter(worker=worker, batch=batch, status=ClaimStatus.OPEN).values("pair_id")
    return list(Pair.objects.filter(pk__in=claimed).order_by("pk"))


def submit_judgments(
    worker: Worker, judgments: Mapping[int, str], *, shown: Sequence[int] | None = None
) -> list[GrammaticalityJudgment]:
    """Save {pair pk: "none" | "minor" | "major"} for one worker: all of them or none, with a message.

    `shown`: the pair pks of the page that was answered; a page with any of them unanswered is
    refused whole (JudgmentsIncomplete), never saved in part.
    """
    if Pair.objects.filter(pk__in=list(judgments), dataset__in=datasets_excluding(worker)).exists():
        raise ValidationRefused("Your account is not taking part in this task at the moment.")
    if shown:
        missing = [pk for pk in shown if not judgments.get(pk)]
        if missing:
            raise JudgmentsIncomplete(
                f"Please judge every sentence: {len(missing)} of {len(shown)} "
                f"{'is' if len(missing) == 1 else 'are'} not answered yet. Nothing was saved; "
                "your answers so far are kept below.",
                missing,
            )
    if not judgments:
        raise ValidationRefused("Please judge at least one sentence.")
    bad = [pk for pk, value in judgments.items() if value not in Grammaticality.values]
    if bad:
        raise ValidationRefused(
            "Please choose no errors, minor issues or major issues for every sentence; nothing was saved."
        )
    pairs = Pair.objects.filter(pk__in=list(judgments), dataset__grammaticality_judgments__gt=0)
    if pairs.count() != len(judgments):
        raise ValidationRefused("Some of these sentences are not open for judging; nothing was saved.")
    # Only the hypotheses of the judge's own pages, open or run out (an expired page's judgment is
    # kept where its place is still free), never a page given back.
    served = (
        GrammaticalityClaim.objects.filter(worker=worker, pair_id__in=list(judgments))
        .exclude(status=ClaimStatus.RELEASED)
        .values_list("pair_id", flat=True)
    )
    if foreign_items(judgments, served):
        raise ValidationRefused(FOREIGN_ITEMS_MESSAGE)
    if pairs.filter(Q(author=worker)).exists():
        raise ValidationRefused("You do not judge sentences you wrote; nothing was saved.")
    if GrammaticalityJudgment.objects.filter(worker=worker, pair_id__in=list(judgments)).exists():
        raise ValidationRefused("You have already judged one of these sentences; nothing was saved.")
    try:
        with transaction.atomic():
            # The pairs' rows are the lock: a second submit for the same hypothesis waits here and
            # then sees this one's judgments in its count.
            wanted = dict(
                Pair.objects.select_for_update(of=("self",))
                .filter(pk__in=list(judgments))
                .order_by("pk")
                .values_list("pk", "dataset__grammaticality_judgments")
            )
            # A statement of its own, under the locks (a statement that waited on a lock re-reads
            # the row, not its subqueries).
            now = timezone.now()
            taken = dict(
                Pair.objects.filter(pk__in=list(judgments))
                .annotate(judged=_judged_subquery(), held=GRAMMATICALITY_CLAIMS.held(now, exclude_worker=worker))
                .annotate(taken=F("judged") + F("held"))
                .values_list("pk", "taken")
            )
            still_open = {pk: value for pk, value in judgments.items() if taken.get(pk, 0) < wanted[pk]}
            created = GrammaticalityJudgment.objects.bulk_create(
                GrammaticalityJudgment(pair_id=pk, worker=worker, judgment=value) for pk, value in still_open.items()
            )
            GrammaticalityClaim.objects.filter(
                worker=worker, pair_id__in=list(judgments), status=ClaimStatus.OPEN
            ).update(status=ClaimStatus.SUBMITTED, submitted_at=now)
            return created
    except IntegrityError:
        raise ValidationRefused("You have already judged one of these sentences; nothing was saved.") from None
