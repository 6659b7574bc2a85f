"""The MPE part of the demo: judged items with an adjudication case, items built from captions
that wait for five judgments in the MPE task (/validate/mpe/next/), and a Prolific MPE study
(`demo-mpe`) whose link sends a participant to those judgments and ends on a completion code."""

import tempfile
from decimal import Decimal
from pathlib import Path
from typing import Any

from corpus.models import Dataset
from corpus.scope import Scope
from corpus.selectors import adjudication_queue
from crowd.models import Study, TaskKind
from importers import mpe
from importers.mpe_items import build_items_from_scenes, import_mpe_file

from .content import OPEN_LINK, ensure_study

DATASET = "mpe-demo"
SCENE = "demo-1001.jpg"
CAPTIONS = (
    "A woman in a red coat walks her dog along a snowy path.",
    "A lady and her brown dog on a walk in the snow.",
    "Someone walking a dog through a winter park.",
    "A woman with a leash strolls past snow-covered trees.",
)
# Five crowd judgments each (E, N, C) and the gold label MPE's researchers gave.
JUDGED = [
    ("demo-1", "A person is outdoors with an animal.", (5, 0, 0), "entailment"),
    ("demo-2", "The woman is walking to work.", (2, 2, 1), "neutral"),  # 2-2-1: adjudicated by hand
    ("demo-3", "The dog is sleeping by a fire.", (0, 0, 5), "contradiction"),
    ("demo-4", "A woman carries her dog.", (3, 0, 2), "entailment"),  # 3-2 E/C: adjudicated by hand
]
# A second scene's four captions as premises; hypotheses written for its fifth caption are the candidates.
BUILD_SCENE = {
    "demo-2002.jpg": [
        (0, "Two boys kick a soccer ball on a dirt field.", []),
        (1, "Kids playing football in a dusty yard.", []),
        (2, "Two children run after a ball.", []),
        (3, "A pair of boys play soccer outside.", []),
        (
            4,
            "Young boys play a game of soccer.",
            [
                "Two boys play soccer on a field.",  # overlap 1.0: rejected, as MPE did
                "The children are on a school team.",
                "Nobody is moving.",
            ],
        ),
    ],
}

# The built items wait for judgments: one batch of them earns the code.
MPE_STUDY: dict[str, Any] = {  # Study fields
    "slug": "demo-mpe",
    "name": "Demo: judge sentences against four captions",
    "task_kind": TaskKind.MPE_JUDGMENT,
    "tasks_per_batch": 1,
    "completion_code": "DEMO-MPE-2468",
    "payment_per_task": Decimal("0.40"),
    **OPEN_LINK,
    "catch_trial_share": 0,
}


def ensure_mpe_demo() -> str:
    """Idempotent: a second run adds nothing. Returns a line for the command's output."""
    premises = tuple(mpe.MpePremise(SCENE, number, text) for number, text in enumerate(CAPTIONS))
    items = [
        mpe.MpeItem(0, item_id, premises, hypothesis, mpe.Judgments(*votes), gold)
        for item_id, hypothesis, votes, gold in JUDGED
    ]
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "mpe_dev.txt"
        mpe.write_mpe(path, items)
        imported = import_mpe_file(path, DATASET)
    built = build_items_from_scenes(BUILD_SCENE, DATASET, origin="demo captions")
    queued = adjudication_queue(Scope.named(DATASET)).count()
    dataset = Dataset.objects.get(slug=DATASET)
    Study(dataset=dataset, **MPE_STUDY).full_clean(validate_unique=False)  # an MPE study needs a multi-premise dataset
    ensure_study(MPE_STUDY, dataset)
    return (
        f"MPE dataset '{DATASET}': {imported.pairs_created} judged items and {built.kept} built items created now "
        f"({built.rejected_overlap} candidate(s) rejected for word overlap > 0.5); "
        f"{queued} item(s) wait in the adjudication queue; Prolific MPE study '{MPE_STUDY['slug']}'."
    )
