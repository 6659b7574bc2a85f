"""The study's admin page gives the link as a full URL,
ready to paste into each market, with this site's own address and the study's signature."""

import html

import pytest
from django.urls import reverse

from tests.collection.writing_helpers import make_study, writing_setup

pytestmark = pytest.mark.django_db


def test_the_admin_shows_each_markets_link_as_a_full_url(admin_client):
    dataset, _ = writing_setup()
    study = make_study(dataset)
    page = html.unescape(admin_client.get(reverse("admin:crowd_study_change", args=[study.pk])).content.decode())
    base = f"http://testserver/study/{study.slug}/?sig={study.link_signature()}"
    assert (
        f"{base}&PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}&SESSION_ID={{{{%SESSION_ID%}}}}"
        in page
    )
    assert f"MTurk (ExternalQuestion URL): <code>{base}</code>" in page
