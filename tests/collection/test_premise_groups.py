"""A dataset's premises with a split per genre × import file (`collection.models.PremiseGroup`), where a
balanced study's claim finds its pool's genres and files: kept by the premises' triggers through every
way premises are added, changed and removed, and always equal to counting the premises themselves."""

import pytest
from django.db import connection
from django.db.models import Count

from collection.models import PremiseGroup
from corpus.models import Premise
from tests import factories

pytestmark = pytest.mark.django_db


def kept() -> dict[tuple[int, int, str], int]:
    return {(g.dataset_id, g.genre_id, g.source): g.premises for g in PremiseGroup.objects.all()}


def counted() -> dict[tuple[int, int, str], int]:
    rows = Premise.objects.exclude(split="").values_list("dataset_id", "genre_id", "source").annotate(n=Count("id"))
    return {(dataset, genre, source): n for dataset, genre, source, n in rows}


def test_the_groups_follow_every_way_premises_are_added_changed_and_removed():
    dataset, other = factories.dataset("groups-one"), factories.dataset("groups-two")
    fiction, travel = factories.genre("fiction"), factories.genre("travel")
    premises = [factories.premise(dataset, fiction, split="train") for _ in range(4)]
    factories.premise(dataset, travel, split="")  # no split: not served, not counted
    assert kept() == counted() == {(dataset.pk, fiction.pk, ""): 4}

    with connection.cursor() as cursor:  # a bulk insert, as an import's COPY adds them
        cursor.execute(
            "INSERT INTO collection_premise (dataset_id, genre_id, prompt_id, text, text_hash, parse, binary_parse,"
            " split, status, writings_done, source, created_at)"
            " SELECT %s, %s, 'b' || n, 'Bulk ' || n, md5(n::text), '', '', 'dev', 'available', 0, 'bulk.jsonl', now()"
            " FROM generate_series(1, 5) n",
            [other.pk, travel.pk],
        )
    assert kept() == counted()
    assert kept()[(other.pk, travel.pk, "bulk.jsonl")] == 5

    Premise.objects.filter(pk=premises[0].pk).update(genre=travel)
    Premise.objects.filter(pk=premises[1].pk).update(source="moved.jsonl")
    Premise.objects.filter(pk=premises[2].pk).update(split="")
    Premise.objects.filter(dataset=dataset, split="").exclude(pk=premises[2].pk).update(split="test")
    Premise.objects.filter(pk=premises[3].pk).update(writings_done=1, split="dev")  # the same groups
    assert (
        kept()
        == counted()
        == {
            (dataset.pk, fiction.pk, ""): 1,
            (dataset.pk, travel.pk, ""): 2,
            (dataset.pk, fiction.pk, "moved.jsonl"): 1,
            (other.pk, travel.pk, "bulk.jsonl"): 5,
        }
    )

    Premise.objects.filter(dataset=other).delete()
    Premise.objects.filter(pk=premises[0].pk).delete()
    assert (
        kept()
        == counted()
        == {
            (dataset.pk, fiction.pk, ""): 1,
            (dataset.pk, travel.pk, ""): 1,
            (dataset.pk, fiction.pk, "moved.jsonl"): 1,
        }
    )


def test_a_deleted_dataset_takes_its_premises_and_groups_with_it():
    dataset, kept_dataset = factories.dataset("groups-gone"), factories.dataset("groups-kept")
    for ds in (dataset, kept_dataset):
        factories.premise(ds, factories.genre("fiction"), split="train")
    dataset.delete()
    assert kept() == counted() == {(kept_dataset.pk, factories.genre("fiction").pk, ""): 1}
