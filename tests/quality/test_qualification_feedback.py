"""Qualification feedback is pass or fail, never a count of matches.

The attack: "You matched X of 5" after each try is an oracle; changing one answer per try (over
several participant ids) reads all five answers off the counts. After the fix, every failed try
of a test reads the same, whatever it matched, and no try names its wrong items, the last included.
"""

import html
import re

import pytest
from django.urls import reverse

from quality.models import QualificationAttempt
from tests.present import present
from tests.quality.qualification_helpers import PROLIFIC, form_data, qualified_study

pytestmark = pytest.mark.django_db


def try_with(client, study, test, correct):
    response = client.post(reverse("qualification", args=[study.slug]), form_data(client, study, correct))
    page = client.get(response["Location"]) if response.status_code == 302 else response
    return html.unescape(re.sub(r"\d+ tr(y|ies) left", "", page.content.decode()))


def feedback_text(html):
    found = re.search(r"Thank you for taking the qualification test\.[^<]*", html)
    return found.group(0) if found else ""


def test_a_failed_try_says_fail_and_not_how_many_matched(client):
    study, test = qualified_study()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    first = feedback_text(try_with(client, study, test, correct=2))
    second = feedback_text(try_with(client, study, test, correct=0))
    print(f"\nfeedback after 2 and after 0 matches: {first!r} / {second!r}")
    assert first and second
    assert "matched" not in first and not re.search(r"\d+ of \d+", first + second)
    assert first.split(" You ")[0] == second.split(" You ")[0]


def test_no_try_names_its_wrong_items_not_even_the_last(client):
    """Throwaway ids, each in a fresh browser, read a last try's wrong items off its page and the
    next id answers them right: pass or fail only, whatever the test's old option says."""
    study, test = qualified_study()
    test.show_wrong_items_after_last_try = True
    test.save()
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    first = try_with(client, study, test, correct=1)
    assert "Thank you for taking" in first and "differed" not in first
    last = try_with(client, study, test, correct=1)
    assert "no tries left" in last
    assert "differed" not in last and not re.search(r"pairs? [\d, ]+ ", feedback_text(last))
    assert present(QualificationAttempt.objects.order_by("-number").first()).correct == 1


def tries_sentence(page):
    found = re.search(r'<span id="qualification-tries">(.*?)</span>', page, re.S)
    return " ".join(found.group(1).split()) if found else ""


@pytest.mark.parametrize("max_attempts", [2, 3])
def test_the_page_states_the_rule_and_the_tries_the_way_they_are_applied(client, max_attempts):
    """The page said "This is try 2; you have 1 try in all, including this one" (a count of
    tries left called the tries in all). Each try's page now names it "try n of N" and the tries
    after it, which agree with the feedback after a failed try; the stated number of matches is
    the one that passes (one fewer fails)."""
    study, test = qualified_study(pass_mark=0.75, max_attempts=max_attempts)
    client.get(reverse("study_entry", args=[study.slug]), PROLIFIC)
    url = reverse("qualification", args=[study.slug])
    page = html.unescape(client.get(url).content.decode())
    assert "at least 3 of your 4 answers match theirs, you join the study" in page
    for number in range(1, max_attempts + 1):
        sentence = tries_sentence(page)
        after = max_attempts - number
        if after:
            more = f"{after} more time{'s' if after > 1 else ''}"
            assert sentence == (
                f"This is try {number} of {max_attempts}: if your answers do not reach that mark, you may take the "
                f"test {more}."
            )
        else:
            assert sentence == f"This is try {number} of {max_attempts}, your last."
        assert "in all" not in page
        if after:
            # One match fewer than stated: a fail, whose feedback counts the tries after it the same way.
            assert client.post(url, form_data(client, study, 2)).status_code == 302
            page = html.unescape(client.get(url).content.decode())
            assert "did not reach this study's pass mark" in page
            assert f"You may take the test again: {after} tr{'y' if after == 1 else 'ies'} left." in page
    assert QualificationAttempt.objects.filter(passed=False).count() == max_attempts - 1
    # The stated number of matches passes.
    passed = try_with(client, study, test, correct=3)
    assert QualificationAttempt.objects.filter(passed=True).count() == 1, passed
