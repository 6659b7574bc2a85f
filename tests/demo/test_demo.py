"""`manage.py load_demo`: premises for every genre, accounts, studies and consistent demo pairs."""

from io import StringIO

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.db.models import Model

from corpus.models import (
    Dataset,
    FaqEntry,
    Genre,
    Pair,
    Premise,
    PromptExample,
    PromptFamily,
    ValidationLabel,
    Worker,
)
from crowd.models import Study
from demo import content as demo_content

pytestmark = pytest.mark.django_db


def load_demo(training=False):
    """The demo command; its snapshot and training runs only where a test is about them (they take seconds)."""
    out = StringIO()
    # The artifacts demo (extra writers' pairs on these premises) has its own test:
    # tests/artifacts/test_demo_artifacts.py; so has the quality demo: tests/quality/test_demo_quality.py.
    call_command(
        "load_demo",
        "--no-artifacts",
        "--no-quality",
        "--no-adversarial",  # tests/adversarial/test_demo_adversarial.py
        *([] if training else ["--no-training"]),
        stdout=out,
    )
    return out.getvalue()


def row_counts():
    models: list[type[Model]] = [
        Dataset,
        Genre,
        PromptFamily,
        PromptExample,
        FaqEntry,
        Premise,
        Pair,
        ValidationLabel,
        Worker,
        Study,
        get_user_model(),
    ]
    return {model.__name__: model._default_manager.count() for model in models}


def test_demo_dataset_follows_the_default_dataset_setting(settings):
    settings.NLI = {**settings.NLI, "DEFAULT_DATASET": "demo-elsewhere"}
    dataset = demo_content.ensure_dataset()
    assert (dataset.slug, dataset.train_validation_fraction) == ("demo-elsewhere", 0.1)
    assert demo_content.ensure_dataset() == dataset


def test_load_demo_restores_genres_and_families_after_a_flush():
    Genre.objects.all().delete()
    PromptFamily.objects.all().delete()
    load_demo()
    assert Genre.objects.count() == 11 and PromptFamily.objects.count() == 6
    # Plus the MPE demo's two caption sets and the decided-rule demo's premise (demo/stopping.py).
    assert Premise.objects.exclude(dataset__slug__in=["mpe-demo", "demo-decided"]).count() == 110


def test_demo_has_recast_pairs_with_provenance_queued_for_the_two_way_task(client):
    from corpus.models import LabelScheme, PairProvenance

    out = StringIO()
    call_command("load_demo", "--no-training", stdout=out)  # the recast demo comes with the extra demos
    output = out.getvalue()
    recast = Dataset.objects.get(slug="demo-recast")
    assert recast.label_scheme == LabelScheme.TWO_WAY and recast.grammaticality_judgments == 3
    pairs = Pair.objects.filter(dataset=recast)
    assert pairs.count() == 10 and not pairs.filter(needs_validation=False).exists()
    assert PairProvenance.objects.filter(pair__dataset=recast, corpus="Kotzias et. al. 2015").count() == 10
    assert "demo-recast" in output and "/validate/grammaticality/" in output
    # The printed two-way study gives a Prolific arrival a batch of these pairs with the two-way buttons.
    url = next(line.split()[-3] for line in output.splitlines() if "two-way validation study" in line)
    page = client.get(url.replace("http://127.0.0.1:8000", ""), follow=True).content.decode()
    assert "Not entailed" in page and 'data-scheme="two_way"' in page
