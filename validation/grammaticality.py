"""The grammaticality task (DNC Appendix B.4): workers read hypotheses on their own and mark each
as having no grammatical errors, minor issues or major issues. Snapshots can then leave out pairs
whose hypothesis most judges found to have major issues (filter `drop_ungrammatical`).

A dataset asks for it with `Dataset.grammaticality_judgments` (judgments wanted per hypothesis;
0, the default, means no such task). There are no claims: a judgment is quick and independent,
one per worker and pair (a unique constraint refuses a second), and a page offers the hypotheses
with the fewest judgments that the worker has neither written nor judged. Two workers on the same
hypothesis at once may give it one judgment more than wanted, which only adds evidence.
"""

from django.db import IntegrityError, transaction
from django.db.models import Count, F, Q

from corpus.models import Grammaticality, GrammaticalityJudgment, Pair

from .services import ValidationRefused

PAGE_SIZE = 5


def hypotheses_to_judge(worker, dataset=None, size=PAGE_SIZE):
    """Up to `size` pairs whose hypotheses want judgments from this worker, fewest judgments first."""
    pairs = Pair.objects.filter(dataset__grammaticality_judgments__gt=0)
    if dataset is not None:
        pairs = pairs.filter(dataset=dataset)
    return list(
        pairs.exclude(author=worker)
        .exclude(grammaticality_judgments__worker=worker)
        .annotate(judged=Count("grammaticality_judgments"))
        .filter(judged__lt=F("dataset__grammaticality_judgments"))
        .order_by("judged", "pk")[:size]
    )


def submit_judgments(worker, judgments):
    """Save {pair pk: "none" | "minor" | "major"} for one worker: all of them or none, with a message."""
    if worker.is_excluded:
        raise ValidationRefused("Your account is not taking part in this task at the moment.")
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
    if pairs.filter(Q(author=worker)).exists():
        raise ValidationRefused("You do not judge sentences you wrote; nothing was saved.")
    try:
        with transaction.atomic():
            return GrammaticalityJudgment.objects.bulk_create(
                GrammaticalityJudgment(pair_id=pk, worker=worker, judgment=value) for pk, value in judgments.items()
            )
    except IntegrityError:
        raise ValidationRefused("You have already judged one of these sentences; nothing was saved.") from None
