"""Worker pages speak to participants in words, never in the stored label values (workers
saw 'entailment' on their pages). Every worker-facing page of the loaded demo is rendered as the
demo worker meets it, and its visible text (text nodes and the attributes a reader is shown or read
aloud) must hold none of the raw values; the values stay in form values and data- attributes."""

import re
from html.parser import HTMLParser
from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db import transaction
from django.test import Client, override_settings
from django.urls import reverse

from corpus.models import PromptFamily
from corpus.prompt_install import install_prompt_content
from crowd.models import Study
from demo.recast import ensure_recast_demo

pytestmark = pytest.mark.django_db

RAW = re.compile(r"\b(entailment|neutral|contradiction|not-entailed)\b", re.IGNORECASE)
SHOWN_ATTRIBUTES = {"aria-label", "title", "placeholder", "alt"}


class VisibleText(HTMLParser):
    def __init__(self):
        super().__init__()
        self.parts, self._hidden = [], 0

    def handle_starttag(self, tag, attrs):
        if tag in {"script", "style", "template"}:
            self._hidden += 1
        for name, value in attrs:
            if name in SHOWN_ATTRIBUTES and value:
                self.parts.append(value)
            if tag == "input" and name == "value" and dict(attrs).get("type") in {"submit", "button"}:
                self.parts.append(value or "")

    def handle_endtag(self, tag):
        if tag in {"script", "style", "template"}:
            self._hidden -= 1

    def handle_data(self, data):
        if not self._hidden:
            self.parts.append(data)


def raw_words(html):
    parser = VisibleText()
    parser.feed(html)
    return sorted({match.group(0) for match in RAW.finditer(" ".join(parser.parts))})


@pytest.fixture(scope="module")
def demo(django_db_setup, django_db_blocker):
    hashers = override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"])
    with django_db_blocker.unblock(), transaction.atomic():
        install_prompt_content()
        with hashers:
            call_command("load_demo", "--no-training", "--no-artifacts", stdout=StringIO())
        ensure_recast_demo()  # the two-way recast study (load_demo leaves it out with --no-artifacts)
        yield
        transaction.set_rollback(True)


def follow(client, url):
    response = client.get(url, follow=True)
    assert response.status_code < 500, (url, response.status_code)
    return response.redirect_chain[-1][0] if response.redirect_chain else url, response.content.decode()


def worker_pages(client):
    """(url, html) of every page a worker meets in the demo."""
    pages = []
    for number, study in enumerate(Study.objects.order_by("slug")):
        # A participant arriving from Prolific at each demo study (their own browser), by the link
        # the market shows (signed where the study asks for it).
        arrival = Client()
        signed = f"&sig={study.link_signature()}" if study.require_signed_link else ""
        pages.append(
            follow(
                arrival,
                f"/study/{study.slug}/?PROLIFIC_PID=label-words-{number}&STUDY_ID=s&SESSION_ID=s-{number}{signed}",
            )
        )
        pages.append(follow(arrival, reverse("home")))
    client.force_login(get_user_model().objects.get(username="worker"))
    pages.append(follow(client, reverse("home")))
    writing_url, page = follow(client, reverse("writing_next"))
    pages.append((writing_url, page))
    batch_url, page = follow(client, reverse("validation:next"))
    pages.append((batch_url, page))
    # The pages that answer a submit: nothing chosen or written, and a value no button offers.
    pages.append((f"POST {writing_url}", client.post(writing_url, {}).content.decode()))
    pages.append((f"POST {batch_url}", client.post(batch_url, {}).content.decode()))
    names = sorted(set(re.findall(r'name="(item-[0-9a-f]+)"', page)))
    assert names
    tampered = client.post(batch_url, dict.fromkeys(names, "bogus")).content.decode()
    pages.append((f"POST {batch_url} (tampered)", tampered))
    pages.append(follow(client, reverse("validation:faq")))
    pages.append(follow(client, reverse("validation:grammaticality")))
    pages.append(follow(client, reverse("validation:mpe-next")))
    pages.append(follow(client, reverse("adversarial:next")))
    for slug in PromptFamily.objects.values_list("slug", flat=True):
        pages.append(follow(client, reverse("faq", args=[slug])))
    return pages


def test_no_worker_page_shows_a_raw_label_value(client, demo):
    pages = worker_pages(client)
    assert len(pages) > 10
    leaks = {url: words for url, html in pages if (words := raw_words(html))}
    assert leaks == {}


def test_the_visible_text_check_sees_a_raw_label():
    assert raw_words('<p>The answer was <b>entailment</b></p><input value="neutral" type="radio">') == ["entailment"]
