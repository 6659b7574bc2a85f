"""The provenance's median seconds per validation label is computed by the database (only the
middle one or two values reach Python) and is the same float statistics.median gives over every
validator label's seconds, unknown and zero left out, for odd and even counts and awkward floats."""

import random
from statistics import median

import pytest

from corpus.models import Dataset, Label, Split, ValidationLabel
from corpus.services import add_labels
from modeling.datasheet import median_seconds, snapshot_provenance
from tests.modeling.conftest import add_pair, add_premise, genre

pytestmark = pytest.mark.django_db
E, N = Label.ENTAILMENT.value, Label.NEUTRAL.value


def timed_corpus(make_worker, count):
    dataset = Dataset.objects.create(slug=f"timed-{count}", name="Timed")
    fiction = genre("fiction")
    pairs = [
        add_pair(dataset, add_premise(dataset, fiction, Split.DEV, f"Premise {i}."), f"Hypothesis {i}.", [E])
        for i in range(count)
    ]
    for worker in (make_worker(), make_worker()):
        add_labels([(pair, N) for pair in pairs], worker=worker, seconds=1.0)
    return dataset, pairs


def python_median(dataset, upper_id):
    """The definition: every validator label's seconds read into Python, unknown and zero left out."""
    values = sorted(
        value
        for value in ValidationLabel.objects.filter(
            pair__dataset=dataset, pair__pk__lte=upper_id, position__gt=1
        ).values_list("seconds", flat=True)
        if value
    )
    return median(values) if values else None


@pytest.mark.parametrize("count", [3, 4])
def test_the_database_median_is_python_median_of_every_timed_validator_label(make_worker, count):
    dataset, pairs = timed_corpus(make_worker, count)
    rng = random.Random(count)
    awkward = [None, 0.0, -0.0, 0.1 + 0.2, 1 / 3, 7.0, 1e-5, 2.5, 1e16 + 2, 12.125]
    labels = list(ValidationLabel.objects.filter(pair__dataset=dataset).order_by("pk"))
    for label in labels:
        label.seconds = rng.choice(awkward) if label.position == 1 else rng.uniform(0.5, 60.0)
    ValidationLabel.objects.bulk_update(labels, ["seconds"])
    for dropped in range(len(labels) - 1):  # odd and even counts of timed labels, down to none
        upper_id = pairs[-1].pk
        got = snapshot_provenance([dataset.slug], {}, upper_id=upper_id)["median_seconds_per_label"]
        want = python_median(dataset, upper_id)
        assert got == want and type(got) is type(want), (dropped, got, want)
        ValidationLabel.objects.filter(pk=labels[dropped].pk).update(seconds=awkward[dropped % len(awkward)])


def test_no_timed_label_gives_no_median(make_worker):
    dataset, _ = timed_corpus(make_worker, 2)
    ValidationLabel.objects.filter(pair__dataset=dataset).update(seconds=0.0)
    assert median_seconds(ValidationLabel.objects.filter(pair__dataset=dataset)) is None
    ValidationLabel.objects.filter(pair__dataset=dataset).update(seconds=None)
    assert median_seconds(ValidationLabel.objects.filter(pair__dataset=dataset)) is None
