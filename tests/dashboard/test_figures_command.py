"""`manage.py dashboard_figures`: a dataset's headline figures as the pages show them (the full
comparison with the pages is tests/demo/test_demo_console.py)."""

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

from tests import factories

pytestmark = pytest.mark.django_db


def test_an_unknown_dataset_is_refused_with_the_known_ones():
    factories.dataset("collected")
    with pytest.raises(CommandError, match=r"No dataset 'nope' \(known: collected\)"):
        call_command("dashboard_figures", "--dataset", "nope")


def test_an_empty_dataset_prints_zeros_and_whole_addresses():
    factories.dataset("collected")
    out = StringIO()
    call_command("dashboard_figures", "--dataset", "collected", "--site", "http://example.org:8000/", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0].split() == ["page", "figures", "address"]
    assert lines[1].startswith("collection") and "0 premises, 0 pairs" in lines[1]
    assert lines[1].endswith("http://example.org:8000/dashboard/?dataset=collected")
    assert not any(line.startswith(("artifacts", "snapshots", "training")) for line in lines)  # nothing to show yet
