"""The pair browser's page rows: each pair with its premise, genre, labels and who gave them, its
typing flags, sense score and model writing checks, read in one statement whatever the page holds
and the writing checks' two when a study turned them on (dashboard.queries.pairs finds the pairs)."""

from collections.abc import Mapping
from typing import Any, TypedDict

from django.db.models import JSONField, QuerySet
from django.db.models.expressions import RawSQL

from corpus.gold import gold_source
from corpus.models import VOTE_FIELDS, Pair, Worker
from model_annotators.writing_checks import checks_of_pairs

from .pairs import PAGE_SIZE


class LabelShown(TypedDict):
    position: int
    label: str
    role: str  # author or validator
    worker: str  # its worker's name; "" for an imported label
    excluded: bool


class SenseShown(TypedDict):
    similarity: float
    low_sense: bool
    method: str


class PairShown(TypedDict):
    """One pair of the browser's page: the values its row shows, read in the page's statement."""

    pk: int
    dataset_id: int
    pair_id: str
    dataset: str
    genre: str
    split: str
    premise: str
    hypothesis: str
    labels: list[LabelShown]
    gold_label: str
    gold_source: str
    typing_flags: list[str]
    sense: SenseShown | None
    model_writing_checks: list[dict[str, Any]]


# A page's labels, in position order, as one JSON array per pair: read with the pairs, not as a
# model instance per label and worker.
PAGE_LABELS_SQL = """
    SELECT coalesce(jsonb_agg(
        jsonb_build_array(l.position, l.label, w.id IS NOT NULL, w.external_id, u.username, l.excluded)
        ORDER BY l.position, l.id), '[]'::jsonb)
    FROM validation_validationlabel l
    LEFT JOIN collection_worker w ON w.id = l.worker_id
    LEFT JOIN auth_user u ON u.id = w.user_id
    WHERE l.pair_id = "collection_pair"."id"
"""
# A pair's typing flags and sense score, each looked up by its unique pair index: joined, a page
# the planner expected to be one row was joined to every typing record by a scan per pair.
PAGE_TYPING_SQL = 'SELECT e.flags FROM authorship_writingevidence e WHERE e.pair_id = "collection_pair"."id"'
PAGE_SENSE_SQL = """
    SELECT jsonb_build_array(s.similarity, s.low_sense, s.method)
    FROM authorship_sensescore s WHERE s.pair_id = "collection_pair"."id"
"""


def pair_rows(
    pairs: QuerySet[Pair],
    *,
    after: int = 0,
    page_size: int = PAGE_SIZE,
    writing_checks: Mapping[int, int] | None = None,
) -> tuple[list[PairShown], int | None]:
    """(the page of `pairs` after pair id `after`; the id to continue after or None), in one
    statement whatever the page holds. `writing_checks`: {dataset id: annotator} of the studies
    that turned them on, when the caller has them (`pair_form`), else they are read."""
    # The page's ids in a subquery of their own, its pairs then joined to what they show: joined
    # to their writers and genres while they were found, a misestimate of the matches made the
    # planner join every match to every worker before it sorted them.
    ids = pairs.filter(pk__gt=after).order_by("pk").values("pk")[: page_size + 1]
    found = list(
        Pair.objects.filter(pk__in=ids)
        .annotate(
            shown_labels=RawSQL(PAGE_LABELS_SQL, (), output_field=JSONField()),
            shown_typing=RawSQL(PAGE_TYPING_SQL, (), output_field=JSONField()),
            shown_sense=RawSQL(PAGE_SENSE_SQL, (), output_field=JSONField()),
        )
        .order_by("pk")
        .values_list(
            "pk",
            "dataset_id",
            "pair_id",
            "dataset__slug",
            "premise__genre__name",
            "premise__split",
            "premise__text",
            "hypothesis",
            "gold_label",
            "adjudicated_label",
            *VOTE_FIELDS,
            "shown_labels",
            "shown_typing",
            "shown_sense",
        )[: page_size + 1]
    )
    more = len(found) > page_size
    found = found[:page_size]
    shown = [(row[0], row[1]) for row in found]
    checked = writing_checks is None or any(dataset in writing_checks for _, dataset in shown)
    checks = checks_of_pairs(shown) if checked else {}
    page: list[PairShown] = []
    for pk, dataset_id, pair_id, dataset, genre, split, premise_text, hypothesis, gold, adjudicated, *rest in found:
        entailment, neutral, contradiction, labels, typing, sense = rest
        page.append(
            {
                "pk": pk,
                "dataset_id": dataset_id,
                "pair_id": pair_id,
                "dataset": dataset,
                "genre": genre or "",
                "split": split or "no split",
                "premise": premise_text,
                "hypothesis": hypothesis,
                "labels": [
                    {
                        "position": position,
                        "label": label,
                        "role": "author" if position == 1 else "validator",
                        "worker": Worker.named(external_id, username) if has_worker else "",
                        "excluded": excluded,
                    }
                    for position, label, has_worker, external_id, username, excluded in labels
                ],
                "gold_label": gold,
                "gold_source": gold_source(gold, adjudicated, entailment, neutral, contradiction),
                "typing_flags": sorted(typing or ()),
                "sense": None if sense is None else {"similarity": sense[0], "low_sense": sense[1], "method": sense[2]},
                "model_writing_checks": checks.get(pk, []),
            }
        )
    return page, (page[-1]["pk"] if more else None)
