"""The dashboard's figures as images of their own (dashboard.charts): a page points at them with
the version of the numbers it shows, the image is an SVG of those numbers, for researchers only."""

import re

import pytest
from django.core.cache import cache
from django.urls import reverse

from dashboard import charts
from modeling.models import Snapshot, TrainingRun
from teams import access

from . import factories

pytestmark = pytest.mark.django_db

LABELS = ["entailment", "neutral", "contradiction"]


def image_addresses(html):
    return [address.replace("&amp;", "&") for address in re.findall(r'<img class="plot" src="([^"]+)"', html)]


def test_the_corpus_page_shows_its_figures_as_images_of_the_numbers_it_shows(client, researcher):
    dataset = factories.corpus()
    client.force_login(researcher)
    html = client.get(reverse("dashboard:corpus"), {"dataset": dataset.slug}).content.decode()
    labels, lengths = sorted(image_addresses(html))
    assert labels.startswith(f"/dashboard/figures/labels.svg?dataset={dataset.slug}&v=")
    assert lengths.startswith(f"/dashboard/figures/lengths.svg?dataset={dataset.slug}&v=")

    response = client.get(lengths)
    assert response.status_code == 200 and response["Content-Type"].startswith("image/svg+xml")
    body = response.content.decode()
    assert body.startswith("<svg") and 'aria-label="Sentence length (words) of premises and hypotheses"' in body
    # The address names this drawing: the browser keeps it (privately), and asks again with its tag.
    assert "private" in response["Cache-Control"] and "max-age=86400" in response["Cache-Control"]
    assert client.get(lengths, headers={"If-None-Match": response["ETag"]}).status_code == 304

    labelled = client.get(labels).content.decode()
    assert 'aria-label="Label distribution"' in labelled and ">entailment<" in labelled


def test_the_image_follows_the_data_and_an_old_address_is_not_kept(client, researcher, settings):
    settings.DASHBOARD_CACHE_SECONDS = 0  # the figures as they are now
    dataset = factories.corpus()
    client.force_login(researcher)
    page = reverse("dashboard:corpus")
    before = next(a for a in image_addresses(client.get(page).content.decode()) if "lengths" in a)
    premise = dataset.premises.first()
    factories.pair(dataset, premise, "A much longer hypothesis than any other one here.", [LABELS[0]])
    after = next(a for a in image_addresses(client.get(page).content.decode()) if "lengths" in a)
    assert after != before

    # A page left open asks for its old address: it gets today's figure, not to be kept.
    stale = client.get(before)
    assert stale.status_code == 200 and "no-cache" in stale["Cache-Control"]
    assert stale["ETag"] == client.get(after)["ETag"]


def test_a_figure_is_drawn_once_per_version_of_its_numbers(client, researcher):
    factories.corpus()
    client.force_login(researcher)
    (address,) = image_addresses(client.get(reverse("dashboard:collection")).content.decode())
    version = address.rsplit("v=", 1)[1]
    assert cache.get(f"dashboard:chart:hourly:{version}") is None  # the page draws nothing
    drawn = client.get(address).content.decode()
    assert cache.get(f"dashboard:chart:hourly:{version}") == drawn
    viewer = charts.Viewer(access.figure_teams(researcher))
    assert charts.version(charts.CHARTS["hourly"].numbers({}, viewer)) == version


def test_training_run_figures_are_images_of_the_run(client, researcher):
    snapshot = Snapshot.objects.create(status="done", content_hash="f" * 64)
    matrix = [[3, 1, 0], [0, 2, 1], [1, 0, 4]]
    run = TrainingRun.objects.create(
        snapshot=snapshot,
        snapshot_hash=snapshot.content_hash,
        model="majority",
        status="done",
        results={"dev": {"accuracy": 0.75, "confusion": {"labels": LABELS, "matrix": matrix}}},
    )
    client.force_login(researcher)
    html = client.get(reverse("dashboard:training_detail", args=[run.pk])).content.decode()
    (address,) = image_addresses(html)
    assert address.startswith(f"/dashboard/figures/confusion.svg?run={run.pk}&v=")
    body = client.get(address).content.decode()
    assert 'aria-label="Confusion matrix"' in body and ">4<" in body
    # A run without a genre matrix has no such figure.
    assert client.get(reverse("dashboard:chart", args=["genre-matrix"]), {"run": run.pk}).status_code == 404
    assert client.get(reverse("dashboard:chart", args=["confusion"]), {"run": 0}).status_code == 404


def test_unknown_figures_are_not_found(client, researcher):
    client.force_login(researcher)
    assert client.get(reverse("dashboard:chart", args=["nothing"])).status_code == 404


@pytest.mark.parametrize("name", ["hourly", "lengths", "labels"])
def test_figures_are_for_researchers_only(client, make_worker, name):
    address = reverse("dashboard:chart", args=[name])
    response = client.get(address)
    assert response.status_code == 302 and "login" in response["Location"]
    client.force_login(make_worker().user)
    assert client.get(address).status_code == 403
