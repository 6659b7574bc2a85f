"""The per-premise task of MPE items (Lai et al. 2017 §5.2): one caption of an item and its
hypothesis per pair, judged with the validation page's three answers and keys, in batches.

The pages are validation's (`views.next_batch_page`, `views.batch_page`); what differs is here.
Claims, the cap of three judgments and the refusals live in `premise_labels`.
"""

from uuid import UUID

from django.db.models import QuerySet

from corpus.models import Worker
from crowd.models import TaskKind

from . import premise_labels as services
from .forms import PremiseBatchForm
from .models import PremiseLabelClaim
from .views import BatchTask, task_views


def batch_claims(worker: Worker, batch: UUID | str) -> QuerySet[PremiseLabelClaim]:
    """A worker's own claims in one batch, with what the page shows; another worker's batch is empty."""
    return (
        PremiseLabelClaim.objects.filter(worker=worker, batch=batch)
        .select_related("premise_pair__item__premise", "study_session__study")
        .order_by("id")
    )


PREMISE = BatchTask(
    item_kind=None,
    task_kind=TaskKind.PREMISE_LABELS,
    claim=services.claim_premise_batch,
    claims=batch_claims,
    item=lambda claim: claim.premise_pair,
    submit=services.submit_premise_batch,
    form=PremiseBatchForm,
    template="validation/premise_batch.html",
    next_url="validation:premise-next",
    batch_url="validation:premise-batch",
    draft_prefix="premise",
    other_kind_url=None,
    renew_url="validation:premise-batch-renew",
    claim_rule=services.PREMISE_CLAIMS,
    no_tasks_context={"premise": True},
    unanswered=lambda form: "Please choose an answer for every pair.",
    context=lambda form, claims: {"study_session": claims[0].study_session},
)


next_batch, batch, renew = task_views(PREMISE)
