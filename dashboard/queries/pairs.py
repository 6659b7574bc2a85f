"""The pair browser: find pairs by text, genre, split, worker, gold label and label pattern, and
read each with its labels and who gave them; and the queue of premises reported by writers.

Every filter is an indexed condition on the pair row or its counters (the label pattern is a
condition on the vote counters, never a scan of the label table), and pages go by pair id
(keyset), so a page costs the same at 433k pairs as at 400.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce
from operator import or_
from typing import Self

from django.db.models import Exists, F, OuterRef, Prefetch, Q, QuerySet

from authorship.judgements import TYPING_FLAGS, Flag
from authorship.models import WritingEvidence, WrittenSentence
from collection.models import PremiseReport, WritingClaim
from corpus.models import (
    LABELS_PER_PAIR,
    NO_GOLD,
    Dataset,
    Genre,
    Label,
    Pair,
    Premise,
    PremiseStatus,
    Split,
    ValidationLabel,
)
from corpus.selectors import TeamDatasets, in_datasets, pairs_in
from crowd.models import Study
from validation.adjudication import matching

PAGE_SIZE = 50
# The browser's flag filter (issue 54, item 3): name -> what the researcher reads.
FLAGS = {
    "typing": "typing evidence: not typed by its writer",
    "repeated": "repeated: a near-copy of its writer's own sentence on another premise",
    "copy": "a near-copy of an earlier sentence",
    "guesser": "labelled by a worker the quality checks flag",
}
VOTES = ("entailment_votes", "neutral_votes", "contradiction_votes")


def _split_221() -> Q:
    """Five labels split 2-2-1 (no gold: MPE and SNLI call these the hard cases)."""
    five = Q(label_count=LABELS_PER_PAIR)
    patterns = Q()
    for one in VOTES:
        twos = [field for field in VOTES if field != one]
        patterns |= Q(**{one: 1, twos[0]: 2, twos[1]: 2})
    return five & patterns


# name -> (what the researcher reads, the condition)
PATTERNS = {
    "unanimous": (
        "all five labels agree",
        Q(label_count=LABELS_PER_PAIR)
        & (
            Q(entailment_votes=LABELS_PER_PAIR)
            | Q(neutral_votes=LABELS_PER_PAIR)
            | Q(contradiction_votes=LABELS_PER_PAIR)
        ),
    ),
    "no_gold": ("five labels, no 3 agree", Q(label_count=LABELS_PER_PAIR, gold_label=NO_GOLD)),
    "split_221": ("five labels split 2-2-1", _split_221()),
    "gold_ne_author": (
        "gold label differs from the author's",
        ~Q(gold_label=NO_GOLD) & ~Q(gold_label=F("author_label")),
    ),
    "in_validation": ("waiting for validation labels", Q(needs_validation=True, label_count__lt=LABELS_PER_PAIR)),
}


@dataclass
class PairFilters:
    """The browser's filters, read from the query string; unknown values are reported, not applied."""

    text: str = ""
    genre: str = ""
    split: str = ""
    worker: str = ""
    writer: str = ""
    study: str = ""
    flag: str = ""
    gold: str = ""
    pattern: str = ""
    after: int = 0
    unknown: tuple[str, ...] = ()

    @property
    def narrows(self) -> bool:
        """Whether any filter is set: a bulk action never acts on every pair by an empty form."""
        return any(
            (
                self.text,
                self.genre,
                self.split,
                self.worker,
                self.writer,
                self.study,
                self.flag,
                self.gold,
                self.pattern,
            )
        )

    @classmethod
    def from_query(cls, params: Mapping[str, str]) -> Self:
        values = {
            name: (params.get(name) or "").strip()[:200]
            for name in ("text", "genre", "split", "worker", "writer", "study", "flag", "gold", "pattern")
        }
        unknown = []
        if values["genre"] and not Genre.objects.filter(slug=values["genre"]).exists():
            unknown.append(values.pop("genre"))
        if values["split"] and values["split"] not in Split.values:
            unknown.append(values.pop("split"))
        if values["gold"] and values["gold"] not in [*Label.values, NO_GOLD]:
            unknown.append(values.pop("gold"))
        if values["pattern"] and values["pattern"] not in PATTERNS:
            unknown.append(values.pop("pattern"))
        if values["flag"] and values["flag"] not in FLAGS:
            unknown.append(values.pop("flag"))
        if values["study"] and not Study.objects.filter(slug=values["study"]).exists():
            unknown.append(values.pop("study"))
        after = params.get("after", "")
        return cls(**values, after=int(after) if after.isdigit() else 0, unknown=tuple(unknown))


def _by_worker(pairs: QuerySet[Pair], name: str) -> QuerySet[Pair]:
    """Pairs the worker wrote or labelled; `name` is a market id or a username."""
    labelled = ValidationLabel.objects.filter(pair=OuterRef("pk")).filter(
        Q(worker__external_id=name) | Q(worker__user__username=name)
    )
    return pairs.filter(Q(author__external_id=name) | Q(author__user__username=name) | Exists(labelled))


def _by_writer(pairs: QuerySet[Pair], name: str) -> QuerySet[Pair]:
    """Pairs the worker wrote (not labelled); `name` is a market id or a username."""
    return pairs.filter(Q(author__external_id=name) | Q(author__user__username=name))


def _by_flag(pairs: QuerySet[Pair], flag: str) -> QuerySet[Pair]:
    if flag in ("typing", "repeated"):
        # The typing record's own flags, or the writer's reuse of a sentence: `flagged` holds both,
        # so the filter reads the flags themselves.
        wanted = sorted(TYPING_FLAGS) if flag == "typing" else [Flag.REPEATED]
        raised = reduce(or_, (Q(flags__contains=[str(name)]) for name in wanted))
        return pairs.filter(Exists(WritingEvidence.objects.filter(raised, pair=OuterRef("pk"))))
    if flag == "copy":  # a near-copy of an earlier sentence (authorship.copies)
        return pairs.filter(Exists(WrittenSentence.objects.filter(pair=OuterRef("pk"), copy_of__isnull=False)))
    # "guesser": labelled by a worker the quality checks flag (the adjudication queue's "flagged")
    return matching(pairs, "flagged", None)


def _by_study(pairs: QuerySet[Pair], slug: str) -> QuerySet[Pair]:
    """Pairs written in the study: its writing claims' premise and writer."""
    claims = WritingClaim.objects.filter(
        study_session__study__slug=slug, premise_id=OuterRef("premise_id"), worker_id=OuterRef("author_id")
    )
    return pairs.filter(Exists(claims))


def matching_pairs(dataset: Dataset | TeamDatasets | None = None, filters: PairFilters | None = None) -> QuerySet[Pair]:
    """Every pair the filters select (the browser pages through it; its bulk actions act on all of it)."""
    filters = filters or PairFilters()
    pairs = pairs_in(dataset, filters.split or None)
    if filters.genre:
        pairs = pairs.filter(premise__genre__slug=filters.genre)
    if filters.gold:
        pairs = pairs.filter(gold_label=filters.gold)
    if filters.pattern:
        pairs = pairs.filter(PATTERNS[filters.pattern][1])
    if filters.text:
        pairs = pairs.filter(
            Q(hypothesis__icontains=filters.text) | Q(premise__text__icontains=filters.text) | Q(pair_id=filters.text)
        )
    if filters.worker:
        pairs = _by_worker(pairs, filters.worker)
    if filters.writer:
        pairs = _by_writer(pairs, filters.writer)
    if filters.study:
        pairs = _by_study(pairs, filters.study)
    if filters.flag:
        pairs = _by_flag(pairs, filters.flag)
    return pairs


def find_pairs(
    dataset: Dataset | TeamDatasets | None = None, filters: PairFilters | None = None, *, page_size: int = PAGE_SIZE
) -> tuple[list[Pair], int | None]:
    """(pairs on this page with premise, genre and labels by position, the id to continue after or None)."""
    filters = filters or PairFilters()
    pairs = matching_pairs(dataset, filters)
    labels = ValidationLabel.objects.select_related("worker__user").order_by("position")
    page = list(
        pairs.filter(pk__gt=filters.after)
        .select_related("premise__genre", "dataset", "author__user")
        .prefetch_related(Prefetch("labels", queryset=labels))
        .order_by("pk")[: page_size + 1]
    )
    more = len(page) > page_size
    page = page[:page_size]
    return page, (page[-1].pk if more else None)


def studies() -> list[Study]:
    """The writing studies, for the browser's study filter."""
    return list(Study.objects.filter(task_kind__in=("writing", "adversarial")).order_by("slug"))


def premise(premise_id: int | str) -> Premise | None:
    """One premise (None when there is none), and the queryset of it that the services take."""
    return Premise.objects.filter(pk=premise_id).first()


def just(premise: Premise) -> QuerySet[Premise]:
    return Premise.objects.filter(pk=premise.pk)


def reported_premises(dataset: Dataset | TeamDatasets | None = None, *, limit: int = 200) -> list[Premise]:
    """Premises held or with open reports, each with its open reports: every premise the
    collection page counts as held is here to act on, and reported ones not held yet too.

    Both kinds are few, so their ids are read from where they are kept (held premises' partial
    index, the open reports) and the premises fetched by id: an OR of the two over the premise
    table walked every premise."""
    open_reports = PremiseReport.objects.filter(resolved=False).select_related("worker__user").order_by("created_at")
    held = Premise.objects.filter(status=PremiseStatus.HELD)
    reported = PremiseReport.objects.filter(resolved=False)
    held = in_datasets(held, dataset)
    reported = in_datasets(reported, dataset, via="premise__dataset")
    ids = {*held.values_list("pk", flat=True), *reported.values_list("premise_id", flat=True)}
    return list(
        Premise.objects.filter(pk__in=ids)
        .select_related("genre", "dataset")
        .prefetch_related(Prefetch("reports", queryset=open_reports, to_attr="open_reports"))
        .order_by("status", "pk")[:limit]
    )


def reported_not_held_count(dataset: Dataset | TeamDatasets | None = None) -> int:
    """Premises with open reports that are not held (fewer reports than the hold takes): still served."""
    reported = PremiseReport.objects.filter(resolved=False).exclude(premise__status=PremiseStatus.HELD)
    reported = in_datasets(reported, dataset, via="premise__dataset")
    return reported.values("premise_id").distinct().count()
