"""Demo recast pairs (DNC): a few review sentences recast with the shipped sentiment template into a
two-way dataset, queued for the two-way validation task and open to the grammaticality task."""

from decimal import Decimal

from corpus.models import Dataset, Genre, Pair
from corpus.services import set_needs_validation
from crowd.models import TaskKind
from importers.recast_service import recast_into

from .content import OPEN_LINK, ensure_study

DATASET = "demo-recast"
STUDY = {
    "slug": "demo-recast-validation",
    "name": "Demo: entailed or not? (recast pairs)",
    "task_kind": TaskKind.VALIDATION,
    "tasks_per_batch": 1,
    "completion_code": "DEMO-RECAST-2468",
    "payment_per_task": Decimal("0.30"),
    **OPEN_LINK,
}
GENRE = "slate"
# Written for the demo in the layout of Kotzias et al.'s files (sentence, 1 positive / 0 negative).
REVIEWS = [
    ("Battery lasts all day and the screen is sharp.", "1", "amazon_cells_labelled.txt"),
    ("It stopped charging after a week.", "0", "amazon_cells_labelled.txt"),
    ("The plot kept me guessing until the very end.", "1", "imdb_labelled.txt"),
    ("Two hours of my life I will not get back.", "0", "imdb_labelled.txt"),
    ("The soup was cold and the waiter never came back .", "0", "yelp_labelled.txt"),
]


def ensure_recast_demo() -> tuple[Dataset, int]:
    """Recast the demo reviews once and open a two-way validation study on them (idempotent);
    returns (dataset, pairs created now)."""
    if Pair.objects.filter(dataset__slug=DATASET).exists():
        return Dataset.objects.get(slug=DATASET), 0
    rows = [
        {"sentence": sentence, "score": score, "source": source, "line": str(line)}
        for line, (sentence, score, source) in enumerate(REVIEWS, start=1)
    ]
    # Filed under an existing demo genre (reviews are popular-culture writing, like Slate), so the
    # demo adds no genre without premises of its own.
    genre = Genre.objects.filter(slug=GENRE).first()
    report = recast_into("sentiment", rows, DATASET, "dev", seed=1, source="demo reviews", genre=genre)
    dataset = Dataset.objects.get(slug=DATASET)
    dataset.name = "Demo recast (DNC sentiment)"
    dataset.grammaticality_judgments = 3
    dataset.save(update_fields=["name", "grammaticality_judgments"])
    # Recast labels are the template's; here they are also sent to the two-way validation task.
    set_needs_validation(Pair.objects.filter(dataset=dataset), True)
    ensure_study(STUDY, dataset)
    return dataset, report.pairs_created
