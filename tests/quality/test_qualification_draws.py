"""A qualification test that throwaway ids cannot learn.

The attack (bench/attacks/qualification_throwaway_ids.py): answer fields were named by the pair's
database id and every try asked the one item set, so twenty ids in one browser learnt the answers
from pass or fail and the attacker's "real" id passed at its first try. Now a try's items are drawn
from a pool larger than the try and stored with it, its fields are named by tokens of that draw
only, and the tries of every id seen in one browser count together.
"""

import html
import re

import pytest
from django.urls import reverse

from quality import qualification
from quality.models import QualificationAnswer, QualificationAttempt, QualificationDraw, QualificationTest
from tests.quality.qualification_helpers import (
    PROLIFIC,
    TRY_SIZE,
    answers,
    draw_on_page,
    form_data,
    qualified_study,
    take_try,
    worker_of_prolific_id,
)

pytestmark = pytest.mark.django_db

SECOND_ID = {**PROLIFIC, "PROLIFIC_PID": "AAAAAAAAAAAAAAAAAAAAAAA2", "SESSION_ID": "sess-second"}


def arrive(client, study, params):
    """Follow the study link as `params`' participant; a browser signed in as another id confirms the switch."""
    url = reverse("study_entry", args=[study.slug])
    response = client.get(url, params)
    if response.status_code == 200 and 'name="switch"' in response.content.decode():
        response = client.post(url, {**params, "switch": "yes"})
    return response


def test_a_try_asks_its_own_draw_from_a_pool_larger_than_the_try(make_worker):
    _, test = qualified_study()
    seen = set()
    for _ in range(12):
        draw = qualification.open_draw(test, make_worker())
        references = [item.reference_id for item in draw.items.all()]
        assert len(references) == len(set(references)) == TRY_SIZE
        seen |= set(references)
    # Twelve draws of 4 out of 8, all one set, has odds of (1/70)**11: the pool is really drawn from.
    assert len(seen) > TRY_SIZE
    assert seen <= set(test.items.values_list("pk", flat=True))


def test_a_reload_shows_the_same_draw_and_the_submit_is_judged_on_it_alone(client):
    study, _test = qualified_study()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    url = reverse("qualification", args=[study.slug])
    first, again = client.get(url).content.decode(), client.get(url).content.decode()
    draw = draw_on_page(first)
    assert draw_on_page(again) == draw and QualificationDraw.objects.count() == 1
    premises = re.findall(r'<p class="premise">(.*?)</p>', first)
    assert premises == re.findall(r'<p class="premise">(.*?)</p>', again) and len(premises) == TRY_SIZE
    response = client.post(url, {"try": draw.token, **{f"answer-{t}": label for t, label in answers(draw, 4).items()}})
    assert response.status_code == 302 and response["Location"] == reverse("writing_next")
    attempt = QualificationAttempt.objects.get()
    drawn = set(draw.items.values_list("reference_id", flat=True))
    assert set(QualificationAnswer.objects.filter(attempt=attempt).values_list("reference_id", flat=True)) == drawn
    assert (attempt.correct, attempt.total) == (4, 4) and QualificationDraw.objects.get().attempt == attempt


def test_answer_fields_name_the_try_never_a_database_id(client):
    study, test = qualified_study()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    page = client.get(reverse("qualification", args=[study.slug])).content.decode()
    names = set(re.findall(r'<input type="radio"[^>]*name="([^"]+)"', page))
    assert len(names) == TRY_SIZE
    ids = {str(pk) for pk in test.items.values_list("pk", flat=True)} | {
        str(pk) for pk in test.items.values_list("pair_id", flat=True)
    }
    for name in names:
        assert re.fullmatch(r"answer-[A-Za-z0-9_-]{16}", name), name
        assert name.removeprefix("answer-") not in ids
    assert 'data-pair="' not in page and 'name="label-' not in page


def test_a_submit_naming_another_ids_try_is_refused_with_a_clear_message_and_saves_nothing(client, make_worker):
    study, _test = qualified_study()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    learnt = form_data(client, study, correct=4)  # the first id's page, answered right
    other = type(client)()
    other.get(reverse("study_entry", args=[study.slug]), SECOND_ID)
    response = other.post(reverse("qualification", args=[study.slug]), learnt)
    assert response.status_code == 400
    assert qualification.OTHER_TRY_MESSAGE in html.unescape(response.content.decode())
    assert not QualificationAttempt.objects.exists()
    # The same id replaying its own sent page is refused too: that try is over.
    assert client.post(reverse("qualification", args=[study.slug]), form_data(client, study, 1)).status_code == 302
    replay = client.post(reverse("qualification", args=[study.slug]), learnt)
    assert replay.status_code == 400 and qualification.OTHER_TRY_MESSAGE in html.unescape(replay.content.decode())
    assert QualificationAttempt.objects.count() == 1


def test_tries_of_several_ids_in_one_browser_count_together(client):
    study, test = qualified_study(max_attempts=2)
    url = reverse("qualification", args=[study.slug])
    arrive(client, study, PROLIFIC)
    for _ in range(2):  # the throwaway id spends the test's two tries
        client.post(url, form_data(client, study, correct=0))
    assert QualificationAttempt.objects.filter(worker=worker_of_prolific_id()).count() == 2
    # The "real" id, in the same browser: no try left, whatever it learnt.
    response = arrive(client, study, SECOND_ID)
    assert response.status_code == 403 and "no tries left" in response.content.decode()
    assert client.get(url).status_code == 403
    assert client.post(url, {"try": "x"}).status_code == 403
    assert QualificationAttempt.objects.count() == 2
    # Another browser (another person, as far as the server can tell) has its own tries.
    elsewhere = type(client)()
    third = {**PROLIFIC, "PROLIFIC_PID": "CCCCCCCCCCCCCCCCCCCCCCC3", "SESSION_ID": "sess-third"}
    assert arrive(elsewhere, study, third)["Location"] == url
    assert elsewhere.post(url, form_data(elsewhere, study, correct=4)).status_code == 302
    assert QualificationAttempt.objects.filter(passed=True).count() == 1 and test.attempts.count() == 3


def test_the_service_counts_tries_per_device_across_ids(make_worker):
    _, test = qualified_study(max_attempts=2)
    first, second, elsewhere = make_worker(), make_worker(), make_worker()
    take_try(test, first, 0, device="a" * 32)
    take_try(test, first, 0, device="a" * 32)
    assert qualification.attempts_left(test, second, "a" * 32) == 0
    with pytest.raises(qualification.QualificationRefused, match="every try"):
        take_try(test, second, 4, device="a" * 32)
    assert qualification.attempts_left(test, elsewhere, "b" * 32) == 2
    assert take_try(test, elsewhere, 4, device="b" * 32).passed


def test_a_pool_too_small_for_its_tries_is_refused_in_the_admin_by_its_sizes(client, researcher):
    study, test = qualified_study(slug="pool-rule")
    client.force_login(researcher)
    url = reverse("admin:quality_qualificationtest_change", args=[test.pk])
    items = list(test.items.values_list("pk", flat=True))
    form = {
        "study": study.pk,
        "items": items[:5],
        "items_per_try": 3,
        "pass_mark": 0.75,
        "max_attempts": 2,
        "grants_trusted": "on",
        "instructions": "",
    }
    response = client.post(url, form)
    assert response.status_code == 200
    text = html.unescape(response.content.decode())
    assert "The pool holds 5 items; a try of 3 needs a pool of at least 6 (2 times the try)" in text
    assert QualificationTest.objects.get().items.count() == 8  # nothing saved
    assert client.post(url, {**form, "items_per_try": 2}).status_code == 302
    assert QualificationTest.objects.get().items_per_try == 2


def test_a_test_whose_pool_became_too_small_admits_nobody_and_says_it_is_not_ready(client):
    study, _test = qualified_study(pool=["entailment"] * 7, items_per_try=4)
    response = client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    assert response.status_code == 403 and "not ready yet" in response.content.decode()
    assert not QualificationDraw.objects.exists()
