"""The qualification test page as a worker reads it: each drawn pair numbered from one, with its
two sentences, its item's token and three keyed choices named for that item; an incomplete try
shown again with each given answer still chosen and only the unanswered pair marked; a worker out
of tries refused with a 403 under the page's own thank-you title and the failed-try words, in the
site's page for the signed-in worker."""

import html
import re

import pytest
from django.test import Client
from django.urls import reverse

from corpus.detokenize import detokenize
from quality import qualification
from quality.models import QualificationAttempt, QualificationDrawItem
from tests.quality.qualification_helpers import (
    PROLIFIC,
    TRY_SIZE,
    WRONG,
    draw_on_page,
    form_data,
    qualified_study,
    worker_of_prolific_id,
)

pytestmark = pytest.mark.django_db

FIELDSET = re.compile(
    r'<fieldset class="card validation-pair( missing)?" data-item="([^"]*)" tabindex="-1">(.*?)</fieldset>', re.S
)
RADIO = re.compile(
    r'<input type="radio" class="label-input" name="([^"]*)" id="([^"]*)" value="([^"]*)"\s+'
    r'data-key="([^"]*)"( checked)?>'
)
LABEL = re.compile(r'<label class="label-button" for="([^"]*)"><kbd>([^<]*)</kbd> ([^<]*)</label>')
CHOICES = [
    ("entailment", "1", "Definitely correct"),
    ("neutral", "2", "Might be correct"),
    ("contradiction", "3", "Definitely incorrect"),
]


def fieldsets(page: str) -> list[tuple[bool, str, str]]:
    return [(bool(missing), token, body) for missing, token, body in FIELDSET.findall(page)]


def opened(client: Client) -> tuple[str, list[QualificationDrawItem]]:
    """The test page of a fresh qualified study, opened from its link, and the draw's items in order."""
    study, _test = qualified_study()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    page = client.get(reverse("qualification", args=[study.slug])).content.decode()
    return page, qualification.draw_items(draw_on_page(page))


def test_each_pair_is_numbered_from_one_with_its_sentences_token_and_three_keyed_choices(client):
    page, items = opened(client)
    shown = fieldsets(page)
    assert len(shown) == len(items) == TRY_SIZE
    for number, (item, (missing, token, body)) in enumerate(zip(items, shown, strict=True), 1):
        assert token == item.token and not missing
        assert f"<legend>Pair {number} of {TRY_SIZE}</legend>" in body
        assert f'aria-label="Your judgement of pair {number}"' in body
        text = html.unescape(body)
        assert detokenize(item.reference.pair.premise.text) in text
        assert detokenize(item.reference.pair.hypothesis) in text
        name = f"answer-{item.token}"
        assert RADIO.findall(body) == [(name, f"{name}-{key}", value, key, "") for value, key, _ in CHOICES]
        assert LABEL.findall(body) == [(f"{name}-{key}", key, words) for _, key, words in CHOICES]


def test_an_incomplete_try_keeps_each_given_answer_chosen_and_marks_only_the_unanswered_pair(client):
    page, items = opened(client)
    draw = draw_on_page(page)
    # Every answer of another label than the expected one, so a choice shown is the one sent.
    given = {item.token: WRONG[item.reference.label] for item in items[:-1]}
    data = {"try": draw.token, **{f"answer-{token}": label for token, label in given.items()}}

    response = client.post(reverse("qualification", args=[draw.test.study.slug]), data)

    assert response.status_code == 400
    shown = fieldsets(response.content.decode())
    assert [token for _, token, _ in shown] == [item.token for item in items]
    for missing, token, body in shown:
        checked = [value for _, _, value, _, tick in RADIO.findall(body) if tick]
        if token in given:
            assert (missing, checked) == (False, [given[token]])
        else:
            assert (missing, checked) == (True, [])
            assert "Please choose an answer for this pair." in body
    assert not QualificationAttempt.objects.exists()


def test_a_worker_out_of_tries_is_refused_with_a_403_under_the_thank_you_title_and_the_failed_words(client):
    study, test = qualified_study(max_attempts=1)
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    url = reverse("qualification", args=[study.slug])
    assert client.post(url, form_data(client, study, correct=0)).status_code == 200

    response = client.get(url)

    assert response.status_code == 403
    assert "crowd/not_admitted.html" in [template.name for template in response.templates]
    words = qualification.failed_message(test, qualification.last_attempt(test, worker_of_prolific_id()))
    text = html.unescape(response.content.decode())
    assert "<title>Thank you for your time · NLI annotation</title>" in text
    assert "<h1>Thank you for your time</h1>" in text
    assert f"<p>{words}</p>" in text and "no tries left" in words
    # Rendered with the request: the site's header still knows the worker and offers the log-out.
    assert ">Log out</button>" in text
