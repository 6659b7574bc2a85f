"""A qualification try draws items its participant id and its browser were not shown before, and a
pass makes a worker trusted only where the study's ids are verified: throwaway ids, each in a fresh
browser, learn a test from pass and fail, and the last one must not become trusted everywhere."""

from collections.abc import Callable

import pytest

from corpus.models import Worker
from crowd.models import Study
from quality import qualification
from quality.models import QualificationDraw
from tests.quality.qualification_helpers import TRY_SIZE, qualified_study, take_try

pytestmark = pytest.mark.django_db


def drawn(worker: Worker) -> list[set[int]]:
    """The items of each of the worker's draws, oldest first."""
    return [
        set(draw.items.values_list("reference_id", flat=True))
        for draw in QualificationDraw.objects.filter(worker=worker).order_by("pk")
    ]


def test_a_second_try_of_an_id_asks_other_items_than_its_first(make_worker: Callable[[], Worker]) -> None:
    # Pool 8, tries of 4: random draws share no item in 1 of 70 cases; three ids make it 1 in 343,000.
    _, test = qualified_study(max_attempts=2)
    for number in range(3):
        worker = make_worker()
        take_try(test, worker, 0, device=f"{number}" * 32)
        take_try(test, worker, 0, device=f"{number}" * 32)
        first, second = drawn(worker)
        assert len(first) == len(second) == TRY_SIZE and not first & second


def test_a_new_id_in_a_browser_asks_items_the_browser_was_not_shown(make_worker: Callable[[], Worker]) -> None:
    _, test = qualified_study(max_attempts=3)
    for number in range(3):
        device = f"{number}" * 32
        earlier, later = make_worker(), make_worker()
        take_try(test, earlier, 0, device=device)
        qualification.open_draw(test, later, device)
        assert not drawn(earlier)[0] & drawn(later)[0]


def test_once_the_pool_is_seen_a_try_is_topped_up_from_seen_items(make_worker: Callable[[], Worker]) -> None:
    _, test = qualified_study(max_attempts=3)
    worker = make_worker()
    for _ in range(3):
        take_try(test, worker, 0, device="d" * 32)
    first, second, third = drawn(worker)
    assert not first & second and len(third) == TRY_SIZE


@pytest.mark.parametrize(
    ("signed", "open_link", "trusted"), [(False, False, False), (True, False, True), (True, True, False)]
)
def test_a_pass_makes_a_worker_trusted_only_where_the_studys_ids_are_verified(
    make_worker: Callable[[], Worker], signed: bool, open_link: bool, trusted: bool
) -> None:
    study, test = qualified_study()
    Study.objects.filter(pk=study.pk).update(require_signed_link=signed, open_link_unverified=open_link)
    test.refresh_from_db()
    worker = make_worker()
    assert take_try(test, worker, TRY_SIZE, device="e" * 32).passed
    assert qualification.has_passed(test, worker)  # admitted to the study either way
    assert Worker.objects.get(pk=worker.pk).is_trusted is trusted
