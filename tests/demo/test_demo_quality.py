"""`make demo` shows qualification and aggregation: a qualified study whose link leads to its test,
and a finished aggregation run on the dashboard; loading twice creates nothing new."""

import re
from io import StringIO

import pytest
from django.core.management import call_command

from crowd.models import StudyAccess
from quality.models import AggregatedLabel, AggregationRun, QualificationTest

pytestmark = pytest.mark.django_db


def load():
    out = StringIO()
    call_command("load_demo", "--no-artifacts", "--no-training", stdout=out)
    return out.getvalue()


def test_the_demo_has_a_qualified_study_with_a_test_and_an_aggregation_run(client):
    output = load()
    test = QualificationTest.objects.get(study__slug="demo-qualified")
    assert test.study.access == StudyAccess.QUALIFIED and test.items.count() == 5
    assert all(item.label == item.pair.gold_label for item in test.items.all())
    run = AggregationRun.objects.get()
    assert run.status == "done" and AggregatedLabel.objects.filter(run=run).exists()

    link = re.search(r"qualified study \(test first\)\s+http://127\.0\.0\.1:8000(\S+)", output).group(1)
    response = client.get(link)
    assert response.status_code == 302 and response["Location"] == "/qualify/demo-qualified/"
    assert client.get(response["Location"]).content.decode().count('class="card validation-pair') == 5
    assert f"/dashboard/aggregation/{run.pk}/" in output

    load()
    assert AggregationRun.objects.count() == 1 and QualificationTest.objects.count() == 1
