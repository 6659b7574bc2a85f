"""The quality app's admin and its AppConfig.ready at the edges mutmut found unguarded: who a
reference label added in the admin is recorded as labelled by, and the receivers the app wires at
start, each once under its own name (Django may call ready() more than once). The Celery tasks of
quality/tasks.py are decorated, so mutmut makes no mutant of them; what each calls has its own tests.

`ready_again` is the other apps' too (their test_mutants_admin_and_tasks.py)."""

from typing import Any

import pytest
from django.apps import apps
from django.dispatch import Signal
from django.urls import reverse

from corpus.models import Label
from corpus.signals import gold_recounted, pairs_moved
from quality.models import ReferenceLabel
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def _keys(signal: Signal) -> list[Any]:
    return [receiver[0] for receiver in signal.receivers]


def ready_again(label: str, *signals: Signal) -> tuple[list[list[Any]], list[list[Any]]]:
    """The signals' receivers (their lookup keys: dispatch uid and sender) before and after the app's
    ready() runs a second time; the receivers are put back as they were whatever it connected."""
    saved = [list(signal.receivers) for signal in signals]
    try:
        apps.get_app_config(label).ready()
        return [[receiver[0] for receiver in kept] for kept in saved], [_keys(signal) for signal in signals]
    finally:
        for signal, kept in zip(signals, saved, strict=True):
            with signal.lock:
                signal.receivers = kept
                signal.sender_receivers_cache.clear()


def test_a_reference_label_added_in_the_admin_is_the_adders_and_stays_theirs_when_another_edits_it(
    client, make_researcher
):
    """Fails if the admin records no one, or a later editor, as the researcher who gave a reference label."""
    adder = make_researcher("adder")
    editor = make_researcher("editor")
    pair = make_pair(make_dataset())
    client.force_login(adder)
    added = client.post(
        reverse("admin:quality_referencelabel_add"), {"pair": pair.pk, "label": Label.ENTAILMENT, "note": "plain"}
    )
    assert added.status_code == 302
    row = ReferenceLabel.objects.get(pair=pair)
    assert (row.label, row.labelled_by) == (Label.ENTAILMENT, adder)
    client.force_login(editor)
    changed = client.post(
        reverse("admin:quality_referencelabel_change", args=[row.pk]),
        {"pair": pair.pk, "label": Label.NEUTRAL, "note": "second look"},
    )
    assert changed.status_code == 302
    row.refresh_from_db()
    assert (row.label, row.note, row.labelled_by) == (Label.NEUTRAL, "second look", adder)


def test_the_quality_apps_ready_wires_the_flag_refresh_once_under_its_names():
    """Fails if a second ready() connects the worker-flag refresh again: each label write refreshes twice."""
    before, after = ready_again("quality", pairs_moved, gold_recounted)
    assert after == before
    assert ("quality-worker-flags-pairs-moved", id(None)) in after[0]
    assert ("quality-worker-flags-gold-recounted", id(None)) in after[1]
