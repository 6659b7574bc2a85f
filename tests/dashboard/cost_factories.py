"""A small hand-built pair of studies whose costs are worked out by hand in test_costs.py.

Writing study (0.90 GBP a task): alice wrote three hypotheses on each of two premises (2 tasks).
Validation study (0.50 GBP a batch): bob, carol, dan and erin gave 11 validation labels in 3
tasks; one catch trial answered (no label); one bonus paid (1.00 GBP) and one still owed.

  dev / fiction   A  E E E E E   five labels, gold E
                  B  N N N       stopped early (decided): gold N, 2 labels saved
                  C  C           waits for validation (1 label)
  dev / letters   D  E N C N E   five labels, no gold
                  E  N N         waits for validation (2 labels)
                  F  C           waits for validation (1 label)
"""

from datetime import timedelta
from decimal import Decimal

from django.utils import timezone

from collection import hypothesis_tally
from collection.models import WritingClaim
from corpus import tallies
from corpus.models import Pair, StoppingRule
from corpus.validation_flags import set_validation_flags
from crowd.models import ClaimStatus, Study, StudySession, TaskKind
from quality.bonuses import mark_paid
from quality.models import BonusCause, BonusEntry, BonusKind
from validation import cost_tally
from validation.models import ValidationClaim

from . import factories

E, N, C = factories.E, factories.N, factories.C


def study(slug, dataset, kind, payment, currency="GBP"):
    return Study.objects.create(
        slug=slug,
        name=slug.replace("-", " ").title(),
        dataset=dataset,
        task_kind=kind,
        tasks_per_batch=2,
        completion_code=slug.upper(),
        payment_per_task=Decimal(payment),
        bonus_currency=currency,
    )


def session(study_, worker, tasks_done, name=""):
    return StudySession.objects.create(
        study=study_, worker=worker, tasks_done=tasks_done, external_session_id=name or f"{study_.slug}-{worker.pk}"
    )


def submitted(model, **fields):
    now = timezone.now()
    return model.objects.create(
        status=ClaimStatus.SUBMITTED, expires_at=now + timedelta(minutes=5), submitted_at=now, **fields
    )


def validated_in(session_by_worker, pair_, validators):
    for validator in validators:
        submitted(ValidationClaim, worker=validator, pair=pair_, study_session=session_by_worker[validator.pk])


def build(dataset_slug="costs", prefix=""):
    """The corpus above; returns (dataset, writing study, validation study, pairs by letter)."""
    ds = factories.dataset(dataset_slug)
    fiction, letters = factories.genre("fiction"), factories.genre("letters", is_training=False)
    alice, bob, carol, dan, erin = (
        factories.worker(f"{prefix}{name}") for name in ("alice", "bob", "carol", "dan", "erin")
    )
    writing = study(f"{prefix}writing", ds, TaskKind.WRITING, "0.90")
    validation = study(f"{prefix}validation", ds, TaskKind.VALIDATION, "0.50")
    p1 = factories.premise(ds, fiction, "dev", f"{prefix}The old man walked slowly down the road.")
    p2 = factories.premise(ds, letters, "dev", f"{prefix}Dear friend, thank you for the letter.")
    write_session = session(writing, alice, 2)
    for premise in (p1, p2):
        submitted(WritingClaim, worker=alice, premise=premise, study_session=write_session)
    everyone = [bob, carol, dan, erin]
    pairs = {
        "A": factories.pair(ds, p1, "A man walked.", [E, E, E, E, E], author=alice, validators=everyone),
        "B": factories.pair(ds, p1, "The man was not in a hurry.", [N, N, N], author=alice, validators=everyone),
        "C": factories.pair(ds, p1, "The road was busy.", [C], author=alice),
        "D": factories.pair(ds, p2, "Someone wrote.", [E, N, C, N, E], author=alice, validators=everyone),
        "E": factories.pair(ds, p2, "A friend wrote a letter.", [N, N], author=alice, validators=everyone),
        "F": factories.pair(ds, p2, "Nobody wrote.", [C], author=alice),
    }
    # The flags through their one writer, which moves the pair tally the pool is summed from.
    for letter in ("C", "F"):
        set_validation_flags(Pair.objects.filter(pk=pairs[letter].pk), needs_validation=True)
    # B stopped once its gold was decided (what the stopping rule records).
    Pair.objects.filter(pk=pairs["B"].pk).update(stopping_rule=StoppingRule.DECIDED)
    set_validation_flags(Pair.objects.filter(pk=pairs["B"].pk), stopped_early=True, needs_validation=False)
    sessions = {bob.pk: session(validation, bob, 2), carol.pk: session(validation, carol, 1)}
    sessions[dan.pk] = session(validation, dan, 0)
    sessions[erin.pk] = session(validation, erin, 0)
    validated_in(sessions, pairs["A"], everyone)
    validated_in(sessions, pairs["B"], everyone[:2])
    validated_in(sessions, pairs["D"], everyone)
    validated_in(sessions, pairs["E"], everyone[:1])
    # A catch trial answered on C: a task's share of work, but no label of C.
    submitted(ValidationClaim, worker=erin, pair=pairs["C"], study_session=sessions[erin.pk], is_catch_trial=True)
    earned = [
        BonusEntry.objects.create(
            kind=BonusKind.EARNED,
            worker=erin,
            study=validation,
            study_session=sessions[erin.pk],
            pair=pairs[letter],
            amount=Decimal("1.00"),
            currency="GBP",
            cause=BonusCause.CATCH_TRIAL,
            reason="Catch trial matched",
        )
        for letter in ("C", "F")
    ]
    mark_paid(validation, [earned[0].pk])
    # The claims and pairs above were made around the writing submit, which keeps the cost page's
    # hypothesis count: recount it, as after any bulk load (tests/collection/test_hypothesis_tally.py
    # checks that the submits keep it).
    tallies.check_and_rebuild(None, hypothesis_tally.TALLY)
    # And the validation claims around the validation submit, which flags the credited claim and
    # keeps the cost page's validation tallies (rebuilt with the flags).
    cost_tally.rebuild_with_credits()
    for letter, pair_ in pairs.items():
        pair_.refresh_from_db()
        pairs[letter] = pair_
    return ds, writing, validation, pairs
