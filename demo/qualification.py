"""The demo's qualification test (`demo-qualified`: a five-item test first, pass mark 80%, two
tries, on demo pairs whose reference label is their gold label) and one Dawid–Skene + MACE
aggregation run on the demo dataset. Idempotent: a second run creates nothing.
"""

from typing import Any

from django.contrib.auth import get_user_model

from base.long_tasks import JobStatus
from corpus.models import NO_GOLD, Pair
from crowd.models import StudyAccess, TaskKind
from quality.aggregation_runs import DEFAULT_METHODS, run_aggregation
from quality.models import AggregationRun, QualificationTest, ReferenceLabel

from .content import ensure_study

QUALIFIED_STUDY = {
    "slug": "demo-qualified",
    "name": "Demo: write three sentences (qualified workers)",
    "task_kind": TaskKind.WRITING,
    "tasks_per_batch": 3,
    "completion_code": "DEMO-QUAL-4321",
    "access": StudyAccess.QUALIFIED,
}
TEST_ITEMS = 10  # the pool: each try draws TRY_ITEMS of it (quality.models.POOL_PER_TRY)
TRY_ITEMS = 5


def ensure_qualified_study(dataset: Any, researcher: Any) -> tuple[Any, Any]:
    study = ensure_study(QUALIFIED_STUDY, dataset)
    test, created = QualificationTest.objects.get_or_create(
        study=study,
        defaults={
            "pass_mark": 0.8,
            "max_attempts": 2,
            "items_per_try": TRY_ITEMS,
            "instructions": "Five pairs that our researchers judged; four matching answers let you in.",
        },
    )
    if created or not test.items.exists():
        pairs = (
            Pair.objects.filter(dataset=dataset, label_count=5)
            .exclude(gold_label=NO_GOLD)
            .order_by("pair_id")[:TEST_ITEMS]
        )
        for pair in pairs:
            reference, _ = ReferenceLabel.objects.get_or_create(
                pair=pair,
                defaults={
                    "label": pair.gold_label,
                    "labelled_by": researcher,
                    "note": "Demo: the pair's gold label, confirmed by a researcher.",
                },
            )
            test.items.add(reference)
    return study, test


def ensure_aggregation_run(dataset: Any, researcher: Any) -> Any:
    run = AggregationRun.objects.filter(dataset=dataset, status=JobStatus.DONE).order_by("pk").first()
    if run is None:
        run = AggregationRun.objects.create(dataset=dataset, methods=list(DEFAULT_METHODS), created_by=researcher)
        run = run_aggregation(run.pk)  # seconds at demo size: in this process, as the embedded mode runs it
    return run


def ensure_qualification_demo(dataset: Any, researcher_username: str) -> tuple[Any, Any, Any]:
    researcher = get_user_model().objects.get(username=researcher_username)
    study, test = ensure_qualified_study(dataset, researcher)
    run = ensure_aggregation_run(dataset, researcher)
    return study, test, run
