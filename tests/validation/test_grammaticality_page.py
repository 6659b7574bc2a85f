"""The grammaticality task: keys like the validation page, a partial page refused with a
clear message and the answers kept, and links to it from the worker's home page and the dashboard."""

import re

import pytest
from django.urls import reverse

from corpus.models import Dataset, GrammaticalityJudgment, LabelScheme
from tests.validation.test_scheme_tasks import scheme_pairs

pytestmark = pytest.mark.django_db


def open_dataset(slug="gram-page", n=3):
    dataset, pairs = scheme_pairs(slug, LabelScheme.TWO_WAY, n=n)
    Dataset.objects.filter(pk=dataset.pk).update(grammaticality_judgments=2)
    return dataset, pairs


def test_a_partial_page_is_refused_and_keeps_the_answers_given(client, make_worker):
    _, pairs = open_dataset()
    worker = make_worker()
    client.force_login(worker.user)
    page = client.get(reverse("validation:grammaticality")).content.decode()
    for number in (1, 2, 3):
        assert page.count(f'data-key="{number}"') == 3
    data = {"shown": [p.pk for p in pairs], f"grammar-{pairs[0].pk}": "minor", f"grammar-{pairs[2].pk}": "major"}
    response = client.post(reverse("validation:grammaticality"), data)
    html = response.content.decode()
    assert response.status_code == 400
    assert "Please judge every sentence: 1 of 3 is not answered yet. Nothing was saved" in html
    assert not GrammaticalityJudgment.objects.exists()
    # The two answers given are still chosen, the missing sentence is marked.
    assert re.search(rf'id="grammar-{pairs[0].pk}-minor"\s+value="minor" data-key="2" checked', html)
    assert re.search(rf'id="grammar-{pairs[2].pk}-major"\s+value="major" data-key="3" checked', html)
    assert re.search(rf'class="card validation-pair missing" data-pair="{pairs[1].pk}"', html)
    # The whole page goes through.
    data[f"grammar-{pairs[1].pk}"] = "none"
    assert client.post(reverse("validation:grammaticality"), data).status_code == 302
    assert GrammaticalityJudgment.objects.filter(worker=worker).count() == 3


def test_the_task_is_linked_from_the_worker_home_and_the_dashboard(client, make_worker, researcher):
    worker = make_worker()
    client.force_login(worker.user)
    url = reverse("validation:grammaticality")
    assert f'href="{url}"' not in client.get(reverse("home")).content.decode()  # no dataset asks for it
    open_dataset()
    assert f'href="{url}"' in client.get(reverse("home")).content.decode()
    client.force_login(researcher)
    assert f'href="{url}"' in client.get(reverse("dashboard:recast")).content.decode()
