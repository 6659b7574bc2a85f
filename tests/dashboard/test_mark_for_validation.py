""" "Mark for validation" from the dashboard: what `manage.py mark_for_validation` does,
from the imports page, with the dataset's counts before and the effect said after, an audit entry,
and the user's teams' datasets only."""

import pytest
from django.urls import reverse

from audit.models import AuditEntry
from corpus.models import Label, Pair, Split
from corpus.validation_flags import set_validation_flags
from tests import factories

pytestmark = pytest.mark.django_db
E = Label.ENTAILMENT.value


@pytest.fixture
def dataset():
    dataset = factories.dataset("to-validate")
    for _ in range(20):
        factories.pair(dataset, factories.premise(dataset, split=Split.TRAIN), [E])
    for split in (Split.DEV, Split.TEST):
        factories.pair(dataset, factories.premise(dataset, split=split), [E])
    # Through the flags' writer, which moves the pair tally the imports page sums.
    set_validation_flags(Pair.objects.filter(dataset=dataset), needs_validation=False)
    return dataset


def marked(dataset, split):
    return Pair.objects.filter(dataset=dataset, premise__split=split, needs_validation=True).count()


def test_a_share_of_train_and_all_dev_test_are_marked_with_the_effect_said(client, researcher, dataset):
    client.force_login(researcher)
    page = client.get(reverse("dashboard:imports")).content.decode()
    assert 'id="mark-validation-form"' in page and "0 of 20" in page  # the counts before
    response = client.post(
        reverse("dashboard:mark_validation"), {"dataset": dataset.slug, "share": "25", "dev_test": "on"}, follow=True
    )
    text = response.content.decode()
    assert "5 train pairs newly marked for validation; 5 of 20 train pairs (25 %)" in text
    assert "2 dev/test pairs newly marked" in text
    assert (marked(dataset, Split.TRAIN), marked(dataset, Split.DEV), marked(dataset, Split.TEST)) == (5, 1, 1)
    dataset.refresh_from_db()
    assert dataset.train_validation_fraction == 0.25
    entry = AuditEntry.objects.get(action="validation.marked")
    assert entry.after["train_newly_marked"] == 5 and entry.dataset_slugs == [dataset.slug]
    assert "5 of 20" in response.content.decode()  # the table shows the effect too
    # A count tops the sample up by that many; the same share again adds nothing.
    client.post(reverse("dashboard:mark_validation"), {"dataset": dataset.slug, "count": "3"})
    assert marked(dataset, Split.TRAIN) == 8
    client.post(reverse("dashboard:mark_validation"), {"dataset": dataset.slug, "share": "40"})
    assert marked(dataset, Split.TRAIN) == 8


def test_a_share_out_of_range_marks_nothing(client, researcher, dataset):
    client.force_login(researcher)
    response = client.post(reverse("dashboard:mark_validation"), {"dataset": dataset.slug, "share": "150"}, follow=True)
    assert "Nothing was marked" in response.content.decode()
    assert marked(dataset, Split.TRAIN) == 0 and not AuditEntry.objects.filter(action="validation.marked").exists()
