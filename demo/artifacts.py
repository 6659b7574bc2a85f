"""Demo content for the artifacts pages: a small crowd, one writer whose contradictions all say
"not" (the monitor flags them), phenomenon tags, a monitor refresh, and the nudge on for the demo
writing study. The extra pairs leave their premises' writing counts alone, so the demo worker still
finds every premise to write on. Idempotent like the rest of the demo.
"""

import random
from typing import Any

from django.db import transaction

from artifacts.models import StudyNudge
from artifacts.monitoring import refresh_monitor, scoring_model
from artifacts.phenomenon_tagger import TaggerUnavailable
from artifacts.selectors import latest_refresh
from artifacts.services import get_tagger, pairs_to_tag, run_tagging_job, start_tagging
from corpus.labels import LABELS
from corpus.models import Pair, Premise, Split
from corpus.scope import Scope
from corpus.services import create_pairs
from crowd.models import Study

from .content import WRITING_STUDY, ensure_worker

CROWD = ["demo-crowd-1", "demo-crowd-2", "demo-crowd-3"]
GUESSABLE_WRITER = "demo-guessable"
PREMISES_PER_WRITER = 20
DEMO_NUDGE_THRESHOLD = 0.6
DEMO_DRAFT = "The woman is not sitting on a bench."

SUBJECTS = ["A woman", "A man", "Someone", "The people", "A child", "Two friends", "The workers", "An old man"]
ACTIONS = ["sitting", "walking", "waiting", "talking", "eating", "working", "reading", "smiling", "standing"]
PLACES = [
    "on a bench",
    "in the city",
    "near the water",
    "at home",
    "in a park",
    "outside",
    "in a room",
    "by the road",
    "at a market",
]


def _sentence(rng: random.Random, negate: bool = False) -> str:
    subject = rng.choice(SUBJECTS)
    verb = "are" if subject in ("The people", "Two friends", "The workers") else "is"
    return f"{subject} {verb} {'not ' if negate else ''}{rng.choice(ACTIONS)} {rng.choice(PLACES)}."


def ensure_artifact_pairs(dataset: Any) -> int:
    """The crowd's and the guessable writer's pairs; returns how many were created now."""
    premises = list(Premise.objects.filter(dataset=dataset, split=Split.TRAIN).order_by("pk")[:PREMISES_PER_WRITER])
    created = 0
    with transaction.atomic():
        for name in [*CROWD, GUESSABLE_WRITER]:
            writer = ensure_worker(name)
            rng = random.Random(name)
            pairs, labels = [], []
            for premise in premises:
                for label in LABELS:
                    pair_id = f"artifacts-{name}-{premise.prompt_id}-{label[0]}"
                    negate = name == GUESSABLE_WRITER and label == "contradiction"
                    text = _sentence(rng, negate=negate)
                    if Pair.objects.filter(dataset=dataset, pair_id=pair_id).exists():
                        continue
                    pairs.append(
                        Pair(premise=premise, pair_id=pair_id, hypothesis=text, author_label=label, author=writer)
                    )
                    labels.append([label])
            if pairs:
                created += len(create_pairs(dataset, Split.TRAIN, pairs, labels))
    return created


def tag_untagged_pairs(stdout: Any = None) -> None:
    """Phenomenon tags and parse trees of every demo pair that has none, in this process (the
    embedded mode tags nothing on arrival): run after each part of the demo that adds pairs, so
    that the snapshot and the pages see every pair tagged and parsed."""
    if not pairs_to_tag().exists():
        return
    try:
        tagger = get_tagger()
    except TaggerUnavailable as error:
        if stdout:
            stdout.write(f"Phenomenon tags skipped: {error}")
        return
    if stdout:
        stdout.write("Tagging the demo pairs with linguistic phenomena (spaCy, seconds)...")
    run_tagging_job(start_tagging(queue=False).pk, tagger=tagger)


def ensure_artifacts_demo(dataset: Any, stdout: Any = None) -> dict[str, Any]:
    """Pairs, tags, a monitor refresh and the nudge: {"created": pairs added now, "refresh": the
    latest monitor refresh, "draft": DEMO_DRAFT's p(contradiction) by the monitor's model, or None}.
    Progress goes to `stdout`; the figures are `demo.figures`' (the dashboard's)."""

    def say(line: str) -> None:
        if stdout:
            stdout.write(line)

    created = ensure_artifact_pairs(dataset)
    study = Study.objects.filter(slug=WRITING_STUDY["slug"]).first()
    if study:
        StudyNudge.objects.get_or_create(study=study, defaults={"enabled": True, "threshold": DEMO_NUDGE_THRESHOLD})
    tag_untagged_pairs(stdout)
    latest = latest_refresh(Scope.of_dataset(dataset))
    if latest is None or created or latest.pairs_total != Pair.objects.filter(dataset=dataset).count():
        say("Refreshing the artifact monitor (hypothesis-only accuracy, flagged writers)...")
        latest = refresh_monitor(dataset)
    _, model = scoring_model(dataset)
    draft = model.score(DEMO_DRAFT)["probabilities"]["contradiction"] if model else None
    return {"created": created, "refresh": latest, "draft": draft}
