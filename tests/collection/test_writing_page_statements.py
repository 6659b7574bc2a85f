"""A worker's writing page costs a few statements, whatever the number of premises."""

import pytest
from django.urls import reverse

from .writing_helpers import add_premises, writing_setup

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("premises", [3, 60])
def test_arrival_and_the_task_page_take_a_few_statements(client, make_worker, django_assert_max_num_queries, premises):
    dataset, genre = writing_setup()
    add_premises(dataset, genre, premises)
    worker = make_worker()
    client.force_login(worker.user)
    # Session, user and worker, the default dataset, the claim's own statements, its savepoints.
    with django_assert_max_num_queries(12):
        arrival = client.get(reverse("writing_next"))
    assert arrival.status_code == 302
    with django_assert_max_num_queries(8):
        task = client.get(arrival["Location"])
    assert task.status_code == 200
