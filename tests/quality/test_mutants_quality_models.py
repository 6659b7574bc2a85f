"""Quality's models at the edges mutmut found unguarded (quality/models.py).

The bonus ledger is append-only: a new row is stored with the arguments its save was given, a
stored row is never edited nor deleted, and each refusal says so. Each row reads in the admin and
the audit log as a researcher names it: a reference label by its pair's pairID, dataset and
hypothesis (cut at 60 characters), the others by their ids and figures.
"""

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import transaction

from corpus.models import Dataset, Pair, Worker
from crowd.models import Study, StudySession, TaskKind
from quality.models import (
    AggregatedLabel,
    AggregationRun,
    BonusCause,
    BonusEntry,
    BonusKind,
    CatchTrialAnswer,
    CorrelatedWorkerGroup,
    GroupDecidedPair,
    LedgerIsAppendOnly,
    QualificationAnswer,
    QualificationAttempt,
    QualificationDraw,
    QualificationDrawItem,
    QualificationTest,
    ReferenceLabel,
    WorkerEstimate,
    WorkerFlagRow,
    WorkerFlagScope,
)
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db  # a new dataset or study names the default team, made on first use


def _earned(worker: Worker) -> BonusEntry:
    """An unsaved earned row of one catch item of a new study's session."""
    dataset = make_dataset("ledger")
    study = Study.objects.create(
        slug="ledger-study",
        name="ledger-study",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=1,
        completion_code="CODE",
        bonus_per_catch_match=Decimal("0.50"),
        bonus_currency="GBP",
    )
    session = StudySession.objects.create(study=study, worker=worker, external_session_id="S1")
    return BonusEntry(
        kind=BonusKind.EARNED,
        worker=worker,
        study=study,
        study_session=session,
        pair=make_pair(dataset),
        amount=Decimal("0.50"),
        currency="GBP",
        cause=BonusCause.CATCH_TRIAL,
        reason="Catch trial matched",
    )


def test_a_stored_ledger_row_is_never_edited_nor_deleted_and_says_so(make_worker: Any) -> None:
    entry = _earned(make_worker())
    entry.save()
    entry.amount = Decimal("100.00")
    with pytest.raises(LedgerIsAppendOnly, match=r"^Bonus ledger rows are never edited; add a row instead\.$"):
        entry.save()
    with pytest.raises(LedgerIsAppendOnly, match=r"^Bonus ledger rows are never deleted\.$"):
        entry.delete()
    assert list(BonusEntry.objects.values_list("amount", flat=True)) == [Decimal("0.50")]


def test_a_new_ledger_rows_save_passes_its_arguments_on_to_django(make_worker: Any) -> None:
    entry = _earned(make_worker())
    # An update forced on a row never stored (by keyword, or by position as Django 5 still takes
    # it) is refused, and nothing is added to the ledger.
    with pytest.raises(ValueError, match="no primary key"), transaction.atomic():
        entry.save(update_fields=["reason"])
    deprecated = pytest.warns(DeprecationWarning, match="Passing positional arguments to save")
    with deprecated, pytest.raises(ValueError, match="no primary key"), transaction.atomic():
        entry.save(False, True)
    assert not BonusEntry.objects.exists()


def _reference(hypothesis: str) -> ReferenceLabel:
    pair = Pair(pair_id="p-17", hypothesis=hypothesis, dataset=Dataset(slug="snli"))
    return ReferenceLabel(pair=pair, label="neutral")


def test_a_reference_label_names_its_pair_and_cuts_a_long_hypothesis_at_sixty() -> None:
    assert str(_reference("A dog runs.")) == "p-17 (snli): “A dog runs.” → neutral"
    sixty = "x" * 60
    assert str(_reference(sixty)) == f"p-17 (snli): “{sixty}” → neutral"
    assert str(_reference(sixty + "y")) == f"p-17 (snli): “{'x' * 59}…” → neutral"


def test_the_qualification_rows_read_as_a_researcher_names_them() -> None:
    assert str(QualificationTest(study=Study(name="Hard pairs"))) == "qualification test of Hard pairs"
    worker = Worker(external_id="w-1", user=User(username="ada"))
    attempt = QualificationAttempt(worker=worker, number=2, correct=7, total=10)
    assert str(attempt) == f"{worker} try 2: 7/10"
    assert str(QualificationDraw(pk=4, worker_id=5, test_id=6)) == "draw 4 of 5 for test 6"
    assert str(QualificationDrawItem(position=3, draw_id=4)) == "item 3 of draw 4"
    assert str(QualificationAnswer(label="contradiction", attempt_id=9)) == "answer contradiction in attempt 9"


def test_the_aggregation_rows_read_as_a_researcher_names_them() -> None:
    assert str(AggregationRun(pk=2, dataset_id=3, status="running")) == "aggregation 2 of 3 (running)"
    assert str(AggregatedLabel(method="mace", pair_id=5, label="entailment")) == "mace label of pair 5: entailment"
    assert str(WorkerEstimate(method="glad", worker_id=7)) == "glad estimate of worker 7"
    assert str(CorrelatedWorkerGroup(number=2, run_id=3)) == "correlated group 2 of aggregation run 3"
    assert str(GroupDecidedPair(pair_id=5, reason="one group")) == "pair 5: one group"


def test_the_catch_ledger_and_flag_rows_read_as_a_researcher_names_them() -> None:
    matched = CatchTrialAnswer(worker_id=1, pair_id=2, label="neutral", matched=True)
    assert str(matched) == "1 on 2: neutral (match)"
    missed = CatchTrialAnswer(worker_id=1, pair_id=3, label="entailment", matched=False)
    assert str(missed) == "1 on 3: entailment (no match)"
    paid = BonusEntry(kind=BonusKind.PAID, amount=Decimal("0.50"), currency="GBP", worker_id=3)
    assert str(paid) == "paid 0.50 GBP to 3"
    scope = WorkerFlagScope(key="all", computed_at=datetime(2024, 3, 5, 9, 7, 59, tzinfo=UTC))
    assert str(scope) == "worker flags of all as of 2024-03-05 09:07"
    assert str(WorkerFlagRow(worker_id=4, scope_id=2, flags=["fast", "gold"])) == "worker 4 in 2: 2 flag(s)"
