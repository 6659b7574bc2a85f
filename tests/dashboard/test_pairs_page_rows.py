"""The Pairs page reads its 50 pairs with everything their rows show (premise, genre, dataset, each
label with its worker, the typing flags, the sense score) in one statement (and the model writing
checks when a study turned them on: tests/dashboard/test_pairs_page_form.py): a full page takes as
many statements as an empty one plus that one, whatever the pairs, labels and evidence it shows."""

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from authorship.models import SenseScore, WritingEvidence
from corpus.models import Pair
from dashboard.queries.pair_page import pair_rows
from dashboard.queries.pairs import PairFilters, matching_pairs

from . import factories
from .factories import C, E, N

pytestmark = pytest.mark.django_db

# Statements of the Pairs page without filters beyond its pairs: the session, the user, the
# datasets, the form's genres and studies with the bulk history (one statement), the page.
PAGE_STATEMENTS = 5


def grow(ds, workers, count):
    """`count` more written pairs, each with five labels, typing evidence and a sense score."""
    fiction = factories.genre("fiction")
    validators = [workers[name] for name in ("bob", "carol", "dan", "erin")]
    for number in range(count):
        premise = factories.premise(ds, fiction, "dev", f"Grown premise {Pair.objects.count()} {number}.")
        pair = factories.pair(ds, premise, f"Grown <b>{number}</b>", [E, N, C, N, E], workers["alice"], validators)
        WritingEvidence.objects.create(
            pair=pair, worker=workers["alice"], field_name="hypothesis", flags=["pasted"], flagged=True
        )
        SenseScore.objects.create(
            pair=pair, worker=workers["alice"], similarity=0.12, known_word_share=1.0, low_sense=True, method="m"
        )


def page_statements(client):
    cache.clear()
    with CaptureQueriesContext(connection) as captured:
        response = client.get(reverse("dashboard:pairs"))
    assert response.status_code == 200
    return response.content.decode(), [entry["sql"] for entry in captured.captured_queries]


def test_a_page_of_pairs_takes_the_same_statements_at_any_size(client, researcher):
    ds, workers = factories.worker_corpus()
    client.force_login(researcher)
    grow(ds, workers, 2)
    small_html, small = page_statements(client)
    grow(ds, workers, 60)  # more than a page: 50 rows of five labels, evidence and a score each
    large_html, large = page_statements(client)
    assert large_html.count('<tr data-pair="') == 50 and small_html.count('<tr data-pair="') == 5
    assert len(small) == len(large) == PAGE_STATEMENTS, large
    # What the rows show came with them: labels and their workers (escaped), flags and scores.
    assert large_html.count('data-position="') == 250 and large_html.count('<span class="flag bad">pasted</span>') == 47
    assert "Grown &lt;b&gt;0&lt;/b&gt;" in large_html and "Grown <b>" not in large_html
    assert 'data-low="1"' in large_html and "low 0.12" in large_html
    assert '<span class="muted">carol</span>' in large_html


def test_each_row_is_what_the_pair_holds(researcher):
    ds, workers = factories.worker_corpus()
    grow(ds, workers, 1)
    unlabelled = factories.pair(ds, factories.premise(ds, None, "", "No split here."), "Imported.", [E])
    unlabelled.labels.update(worker=None)
    rows, after = pair_rows(matching_pairs(filters=PairFilters()))
    assert after is None
    by_id = {row["pair_id"]: row for row in rows}
    grown = by_id[Pair.objects.get(hypothesis="Grown <b>0</b>").pair_id]
    assert [(label["position"], label["label"], label["role"], label["worker"]) for label in grown["labels"]] == [
        (1, E, "author", "alice"),
        (2, N, "validator", "bob"),
        (3, C, "validator", "carol"),
        (4, N, "validator", "dan"),
        (5, E, "validator", "erin"),
    ]
    assert grown["typing_flags"] == ["pasted"] and grown["sense"] == {
        "similarity": 0.12,
        "low_sense": True,
        "method": "m",
    }
    assert (grown["gold_label"], grown["gold_source"], grown["genre"], grown["split"]) == (
        "-",
        "none",
        "Fiction",
        "dev",
    )
    imported = by_id[unlabelled.pair_id]
    assert [label["worker"] for label in imported["labels"]] == [""]
    assert (imported["split"], imported["sense"], imported["typing_flags"]) == ("no split", None, [])
    h1 = by_id[Pair.objects.get(hypothesis="h1").pair_id]
    assert (h1["gold_label"], h1["gold_source"]) == (E, "crowd")


def test_a_label_list_escapes_every_text_it_shows():
    from django.utils.html import escape

    from dashboard.queries.pair_page import LabelShown
    from dashboard.templatetags.pair_rows import label_items

    hostile: LabelShown = {
        "position": 2,
        "label": 'neutral"><b>',
        "role": "<i>validator",
        "worker": "<script>x'",
        "excluded": True,
    }
    imported: LabelShown = {"position": 1, "label": "entailment", "role": "author", "worker": "", "excluded": False}
    kept: LabelShown = {"position": 3, "label": "neutral", "role": "validator", "worker": "carol", "excluded": False}
    shown = str(label_items([imported, hostile, kept]))
    assert shown == (
        '<li data-position="1"><span class="label-chip label-entailment">entailment</span>\n'
        '            author <span class="muted">(imported)</span></li>\n'
        f'<li data-position="2"><span class="label-chip label-{escape(hostile["label"])}">{escape(hostile["label"])}'
        f'</span>\n            {escape(hostile["role"])} <span class="muted">{escape(hostile["worker"])}</span>'
        ' <span class="flag bad">excluded</span></li>\n'
        '<li data-position="3"><span class="label-chip label-neutral">neutral</span>\n'
        '            validator <span class="muted">carol</span></li>'
    )
    assert "<script>" not in shown and "<b>" not in shown and "<i>" not in shown
