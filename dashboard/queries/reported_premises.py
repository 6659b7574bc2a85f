"""The queue of premises reported by writers, and the premise a report action acts on."""

from django.db.models import Prefetch, QuerySet

from collection.models import PremiseReport
from corpus.models import Premise, PremiseStatus
from corpus.scope import EVERYTHING, Scope


def premise(premise_id: int | str) -> Premise | None:
    """One premise (None when there is none), and the queryset of it that the services take."""
    return Premise.objects.filter(pk=premise_id).first()


def just(premise: Premise) -> QuerySet[Premise]:
    return Premise.objects.filter(pk=premise.pk)


def reported_premises(scope: Scope = EVERYTHING, *, limit: int = 200) -> list[Premise]:
    """Premises held or with open reports, each with its open reports. Both kinds are few, so their
    ids are read where they are kept and the premises fetched by id: an OR of the two over the
    premise table walked every premise."""
    open_reports = PremiseReport.objects.filter(resolved=False).select_related("worker__user").order_by("created_at")
    held = scope.filter(Premise.objects.filter(status=PremiseStatus.HELD))
    reported = scope.filter(PremiseReport.objects.filter(resolved=False), via="premise__dataset")
    ids = {*held.values_list("pk", flat=True), *reported.values_list("premise_id", flat=True)}
    return list(
        Premise.objects.filter(pk__in=ids)
        .select_related("genre", "dataset")
        .prefetch_related(Prefetch("reports", queryset=open_reports, to_attr="open_reports"))
        .order_by("status", "pk")[:limit]
    )


def reported_not_held_count(scope: Scope = EVERYTHING) -> int:
    """Premises with open reports that are not held (fewer reports than the hold takes): still served."""
    reported = PremiseReport.objects.filter(resolved=False).exclude(premise__status=PremiseStatus.HELD)
    return scope.filter(reported, via="premise__dataset").values("premise_id").distinct().count()
