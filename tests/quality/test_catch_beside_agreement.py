"""Catch accuracy judged beside agreement on ordinary pairs.

The attack: six patient cheaters answer every catch trial right (they found them some other way)
and label the rest at chance. Before: none flagged, and the bonus page ranked them first with 100%
catch accuracy. After: each is flagged `catch_only` and listed after the honest validator.
"""

import random
from decimal import Decimal

import pytest

from corpus.labels import LABELS
from crowd.models import Study, StudySession, TaskKind
from quality import bonuses, sequential
from quality.models import ReferenceLabel
from quality.selectors import worker_quality
from quality.services import set_reference_label
from tests.present import present
from tests.validation.validation_factories import make_dataset, make_pair
from validation import batch_claims, services
from validation.models import ValidationClaim

pytestmark = pytest.mark.django_db
BATCHES = 16


def test_perfect_catch_accuracy_beside_chance_labels_is_flagged_and_not_ranked_first(make_worker, monkeypatch):
    # The page order's shuffler is a SystemRandom (participants must not predict it); seeded here so
    # the run does not depend on what ran before.
    monkeypatch.setattr(batch_claims, "_shuffler", random.Random(11))
    # Claims draw their catch trials with the module-level random: seeded, so every participant's
    # share of catch trials is the same whatever ran before this test.
    random.seed(11)
    dataset = make_dataset("cheaters")
    # Enough ordinary answers that a cheater's chance labels are held, whatever order the batches
    # come in (at random): at ~50 ordinary answers a uniform guesser passes the
    # sequential test far less than once in a thousand sessions; at 18 (six batches) it passed in
    # about one of five, and one of six cheaters then ranked first by chance.
    for number in range(240):
        make_pair(dataset, label=LABELS[number % 3])
    for _ in range(60):
        set_reference_label(make_pair(dataset, needs_validation=False), LABELS[0], is_catch_trial=True)
    study = Study.objects.create(
        slug="cheaters",
        name="Cheaters",
        dataset=dataset,
        task_kind=TaskKind.VALIDATION,
        tasks_per_batch=BATCHES,
        completion_code="CHEAT",
        catch_trial_share=0.4,
        bonus_per_catch_match=Decimal("1.00"),
    )
    reference = dict(ReferenceLabel.objects.values_list("pair_id", "label"))
    rng = random.Random(11)
    honest = make_worker(username="honest")
    cheaters = [make_worker(username=f"cheater-{n}") for n in range(6)]
    for worker in [honest, *cheaters]:
        session = StudySession.objects.create(study=study, worker=worker, external_session_id=f"s{worker.pk}")
        for _ in range(BATCHES):
            batch = present(batch_claims.claim_validation_batch(worker, study_session=session))
            answers = {}
            for claim in ValidationClaim.objects.filter(batch=batch).select_related("pair"):
                if claim.is_catch_trial or worker is honest:
                    answers[claim.pair_id] = reference.get(claim.pair_id, claim.pair.author_label)
                else:
                    answers[claim.pair_id] = rng.choice(LABELS)
            services.submit_validation_batch(worker, batch, answers)
    totals = bonuses.worker_totals(study)
    ranked = [row["name"] for row in totals]
    flagged = {
        row.worker.pk for row in worker_quality() if any(flag.kind == sequential.CATCH_ONLY for flag in row.flags)
    }
    cheater_rows = [row for row in totals if row["id"] in {cheater.pk for cheater in cheaters}]
    print(
        f"\nbonus ranking: {ranked}; catch accuracy of cheaters "
        f"{[row['catch_accuracy'] for row in cheater_rows]}; flagged catch-only: {len(flagged)} of 6"
    )
    assert all(row["catch_accuracy"] == 1.0 for row in cheater_rows if row["catch_seen"])
    assert ranked[0] == str(honest)
    assert flagged == {w.pk for w in cheaters if any(r["id"] == w.pk and r["catch_seen"] >= 3 for r in totals)}
    assert len(flagged) >= 4 and honest.pk not in flagged
