"""Demo content for quality control, idempotent like the rest of the demo: 36 pairs on the demo's
dev premises with one always-wrong, one-second label each from `demo-guesser` (flagged on the
workers page); a catch trial (the researcher's reference label on an ordinary demo pair whose five
labels agree, never a guesser pair, whose marked hypotheses would give it away) and a catch-trial
share of 20% on the demo validation study; and a Prolific participant (`demo-pid-catch`) who
answered the catch trial right: one unpaid bonus on the bonus page.
"""

import uuid
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Exists, OuterRef

from corpus.labels import LABELS, LABELS_PER_PAIR
from corpus.models import Market, Pair, Premise, Split, Worker
from corpus.services import add_labels, create_pairs
from crowd.models import Study, StudySession
from quality.catch_trials import score_catch_trials
from quality.models import BonusEntry, CatchTrialAnswer, ReferenceLabel
from quality.services import set_reference_label

from .content import RESEARCHER, VALIDATION_STUDY, ensure_worker

GUESSER = "demo-guesser"
CATCH_PARTICIPANT = "demo-pid-catch"
GUESSER_PAIRS = 36
DEMO_CATCH_SHARE = 0.2
# The demo study's catch bonus: a new study's default is 0.
DEMO_CATCH_BONUS = Decimal("1.00")


def ensure_guesser_pairs(dataset: Any) -> int:
    premises = list(Premise.objects.filter(dataset=dataset, split=Split.DEV).order_by("pk")[: GUESSER_PAIRS // 3])
    guesser = ensure_worker(GUESSER)
    created = 0
    with transaction.atomic():
        for premise in premises:
            for index, truth in enumerate(LABELS):
                pair_id = f"quality-{premise.prompt_id}-{truth[0]}"
                if Pair.objects.filter(dataset=dataset, pair_id=pair_id).exists():
                    continue
                (pair,) = create_pairs(
                    dataset,
                    Split.DEV,
                    [
                        Pair(
                            premise=premise,
                            pair_id=pair_id,
                            author_label=truth,
                            hypothesis=f"{premise.text.split('.')[0][:120]} ({['surely', 'perhaps', 'not'][index]}).",
                        )
                    ],
                    [[truth] * 4],
                )
                wrong = LABELS[(index + 1 + created // 3) % 3]
                add_labels([(pair, wrong if wrong != truth else LABELS[(index + 2) % 3])], worker=guesser, seconds=1.2)
                created += 1
    return created


def catch_trial_pair(dataset: Any) -> Any:
    """The demo's catch trial: an ordinary written demo pair whose five labels all agree with its author,
    one of a premise with no pair left to validate first (a catch premise waits for its validation to
    end: quality.catch_trials); the kept reference label of an earlier load first, so a rerun keeps it."""
    kept = ReferenceLabel.objects.filter(pair__dataset=dataset, is_catch_trial=True).select_related("pair").first()
    if kept is not None:
        return kept.pair
    candidates = (
        Pair.objects.filter(dataset=dataset, premise__source="demo", label_count=LABELS_PER_PAIR)
        .exclude(pair_id__startswith="quality-")
        .alias(
            waiting=Exists(
                Pair.objects.filter(
                    premise_id=OuterRef("premise_id"), needs_validation=True, label_count__lt=LABELS_PER_PAIR
                )
            )
        )
        .order_by("waiting", "pair_id")
    )
    for pair in candidates:
        if pair.gold_label == pair.author_label and getattr(pair, f"{pair.author_label}_votes") == LABELS_PER_PAIR:
            return pair
    return None


def ensure_quality_demo(dataset: Any) -> str:
    """Returns a one-line summary."""
    created = ensure_guesser_pairs(dataset)
    trap = catch_trial_pair(dataset)
    study = Study.objects.filter(slug=VALIDATION_STUDY["slug"]).first()
    if trap is None or study is None:
        return f"Quality: {created} guesser pairs; no catch trial (no demo validation study)."
    researcher = get_user_model().objects.filter(username=RESEARCHER[0]).first()
    if not ReferenceLabel.objects.filter(pair=trap).exists():
        set_reference_label(
            trap,
            trap.author_label,
            by=researcher,
            is_catch_trial=True,
            note="Demo catch trial: the author and three validators agree.",
        )
    if study.catch_trial_share == Study._meta.get_field("catch_trial_share").default:
        Study.objects.filter(pk=study.pk).update(catch_trial_share=DEMO_CATCH_SHARE)
    if not study.bonus_per_catch_match:
        # A new study pays no catch bonus unless told; the demo's does, to show one.
        study.bonus_per_catch_match = DEMO_CATCH_BONUS
        Study.objects.filter(pk=study.pk).update(bonus_per_catch_match=DEMO_CATCH_BONUS)
    participant = ensure_worker(CATCH_PARTICIPANT)
    if participant.market != Market.PROLIFIC:
        Worker.objects.filter(pk=participant.pk).update(market=Market.PROLIFIC, external_id=CATCH_PARTICIPANT)
    session, _ = StudySession.objects.get_or_create(
        study=study,
        worker=participant,
        external_session_id="demo-session-catch",
        defaults={"external_study_id": "demo-study"},
    )
    if not CatchTrialAnswer.objects.filter(worker=participant, pair=trap).exists():
        with transaction.atomic():
            score_catch_trials(
                worker=participant, study_session=session, batch=uuid.uuid4(), catch_labels={trap.pk: trap.author_label}
            )
    unpaid = BonusEntry.objects.filter(study=study, kind="earned", payment__isnull=True).count()
    return (
        f"Quality: {created} guesser pairs added ('{GUESSER}' is flagged on the workers page); catch trial "
        f"{trap.pair_id}; {unpaid} unpaid bonus(es) in '{study.slug}' on the bonus page."
    )
