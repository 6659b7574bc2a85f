"""The demo's decided-rule dataset: its pairs stop early and the validation page shows the savings."""

import pytest

from corpus.models import Pair
from corpus.stopping import majority_gold
from demo.stopping import DATASET, SEQUENCES, ensure_stopping_demo

pytestmark = pytest.mark.django_db


def test_the_decided_demo_saves_labels_and_changes_no_gold(client, researcher):
    line = ensure_stopping_demo()
    assert ensure_stopping_demo() == line  # idempotent
    pairs = {p.pair_id: p for p in Pair.objects.filter(dataset__slug=DATASET)}
    stopped = [p for p in pairs.values() if p.stopped_early]
    assert len(stopped) == 7  # only the no-gold shape needs its fifth label
    for index, sequence in enumerate(SEQUENCES):
        assert pairs[f"decided-1-{index}"].gold_label == majority_gold(sequence)
    saved = sum(5 - p.label_count for p in stopped)
    assert f"{saved} validation labels saved" in line
    client.force_login(researcher.user if hasattr(researcher, "user") else researcher)
    page = client.get(f"/dashboard/validation/?dataset={DATASET}")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="stat-stopped_early_pairs" data-value="7"' in html
    assert f'id="stat-labels_saved" data-value="{saved}"' in html
