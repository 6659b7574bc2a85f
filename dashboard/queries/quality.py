"""The researcher's labelling page and the bonus page: the pair's reference label, catch trials and pools."""

from typing import Any

from corpus.models import Pair
from crowd.models import Study, StudySession
from quality.catch_trials import catch_pools
from quality.models import ReferenceLabel
from validation.models import ValidationClaim

CATCH_TRIALS_SHOWN = 20


def reference_label(pair: Pair | None) -> ReferenceLabel | None:
    return ReferenceLabel.objects.filter(pair=pair).first() if pair else None


def recent_catch_trials(*, limit: int = CATCH_TRIALS_SHOWN) -> list[ReferenceLabel]:
    return list(
        ReferenceLabel.objects.filter(is_catch_trial=True).select_related("pair").order_by("-updated_at")[:limit]
    )


def catch_pools_of_active_studies() -> list[dict[str, Any]]:
    """Each active study's catch-trial pool: pairs and servings left (a dry pool serves none)."""
    return catch_pools(Study.objects.filter(is_active=True).select_related("dataset"), ValidationClaim.objects.all())


def session_of_study(study: Study, session_id: int) -> StudySession | None:
    """The study's session of that id (a discretionary bonus's recipient), or None."""
    return StudySession.objects.filter(study=study, pk=session_id).first()
