"""The grammaticality task (DNC Appendix B.4): workers read hypotheses on their own and mark each
as having no grammatical errors, minor issues or major issues. Snapshots can then leave out pairs
whose hypothesis most judges found to have major issues (filter `drop_ungrammatical`).

A dataset asks for it with `Dataset.grammaticality_judgments` (judgments wanted per hypothesis;
0, the default, means no such task). There are no claims: a judgment is quick and independent,
one per worker and pair (a unique constraint refuses a second), and a page offers the hypotheses
with the fewest judgments that the worker has neither written nor judged. A submit locks its pairs
(as validation's submits lock theirs) and counts their judgments under the lock, so two judges
submitting the same hypothesis at once never give it more judgments than wanted: the later one's
judgment of a hypothesis that filled meanwhile is not kept, and the rest of its page is.
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


def pairs_shown_again(worker, pks):
    """These pairs, where this worker may still judge them (a refused page shown again)."""
    return list(
        Pair.objects.filter(pk__in=list(pks), dataset__grammaticality_judgments__gt=0)
        .exclude(author=worker)
        .exclude(grammaticality_judgments__worker=worker)
    )


class JudgmentsIncomplete(ValidationRefused):
    """A page sent with sentences unanswered: nothing saved; `missing` are their pair pks."""

    def __init__(self, message, missing):
        super().__init__(message)
        self.missing = list(missing)


def submit_judgments(worker, judgments, shown=None):
    """Save {pair pk: "none" | "minor" | "major"} for one worker: all of them or none, with a message.

    `shown`: the pair pks of the page that was answered; a page with any of them unanswered is
    refused whole (JudgmentsIncomplete), never saved in part (issue 27).
    """
    if worker.is_excluded:
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
            judged = dict(
                GrammaticalityJudgment.objects.filter(pair_id__in=list(judgments))
                .values("pair_id")
                .annotate(n=Count("pk"))
                .values_list("pair_id", "n")
            )
            still_open = {pk: value for pk, value in judgments.items() if judged.get(pk, 0) < wanted[pk]}
            return GrammaticalityJudgment.objects.bulk_create(
                GrammaticalityJudgment(pair_id=pk, worker=worker, judgment=value) for pk, value in still_open.items()
            )
    except IntegrityError:
        raise ValidationRefused("You have already judged one of these sentences; nothing was saved.") from None
