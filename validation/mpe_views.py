"""The MPE judgment task: four captions, a proposed sentence, yes / unknown / no (Lai et al. 2017 §4.2).

Batches, claims, expiry and the five-judgment target are validation's own, and so are the two pages
(`views.next_batch_page`, `views.batch_page`); only the wording differs, and it is all here.
"""

from corpus.models import ItemKind
from corpus.mpe_wording import ANSWERS, INSTRUCTIONS, QUESTION
from crowd.models import TaskKind

from . import batch_claims
from .forms import MpeBatchForm
from .views import BatchTask, task_views

MPE = BatchTask(
    item_kind=ItemKind.MULTI_PREMISE,
    task_kind=TaskKind.MPE_JUDGMENT,
    claim=batch_claims.claim_mpe_batch,
    form=MpeBatchForm,
    template="validation/mpe_batch.html",
    next_url="validation:mpe-next",
    batch_url="validation:mpe-batch",
    draft_prefix="mpe",
    other_kind_url=None,
    renew_url="validation:mpe-batch-renew",
    items_word="items",
    no_tasks_context={"mpe": True},
    unanswered=lambda form: "Please answer yes, unknown or no for every item.",
    incomplete=lambda incomplete: "Please answer yes, unknown or no for every item; nothing was saved yet.",
    context=lambda form, claims: {
        "question": QUESTION,
        "instructions": INSTRUCTIONS.split("\n\n"),
        "answers": [(answer, text) for answer, (_, text) in ANSWERS.items()],
    },
)


next_batch, batch, renew = task_views(MPE)
