"""The demo's decided-rule dataset: its pairs stop early and the validation page shows the savings."""

import pytest

from corpus.models import Pair, Split, StoppingPolicy, StoppingRule
from corpus.stopping import majority_gold
from crowd.models import Study
from dashboard.queries.costs import cost_overview
from demo.stopping import DATASET, SEQUENCES, STUDY, ensure_stopping_demo

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


def test_the_decided_demo_is_a_finished_study_whose_savings_the_cost_page_shows(client, researcher):
    ensure_stopping_demo()
    study = Study.objects.get(slug=STUDY["slug"])
    assert study.dataset.slug == DATASET
    assert StoppingPolicy.objects.get(dataset=study.dataset, split=Split.DEV).rule == StoppingRule.DECIDED
    stopped = Pair.objects.filter(dataset=study.dataset, stopped_early=True)
    saved = sum(5 - n for n in stopped.values_list("label_count", flat=True))
    assert saved > 0
    # Every validation label is a submitted claim in the study: the cost page credits the study.
    validation_labels = sum(
        n - 1 for n in Pair.objects.filter(dataset=study.dataset).values_list("label_count", flat=True)
    )
    assert study.sessions.filter(completed_at__isnull=False).count() == 4
    overview = cost_overview()
    row = next(row for row in overview["studies"] if row.study.slug == STUDY["slug"])
    assert row.saved == saved and row.labels_bought == validation_labels and row.gold > 0
    client.force_login(researcher)
    page = client.get("/dashboard/costs/")
    assert page.status_code == 200 and STUDY["name"] in page.content.decode()
