"""Train / dev / test splits of a dataset's premises (MultiNLI §2.2, Partition).

Per genre, premises holding N pairs go to dev and N to test ("2,000 examples per genre" counts
pairs), chosen at random; training genres put the rest in train, held-out genres leave it
unassigned, so their pairs appear only in the mismatched dev and test sets. A premise with pairs
counts the pairs it has; one not yet written on counts the pairs it will get (three per writing,
`Dataset.writings_per_premise` writings), so a target is met to within one premise's pairs.
Splits hold premises rather than pairs, so no premise sentence occurs in more than one split.
A premise somebody has already written on (or holds a writing claim for) keeps its split and
counts toward the targets; everything else is drawn afresh, so the same seed on the same
premises always gives the same splits, whatever the database's collation.
"""

import random
from dataclasses import dataclass, field

from django.db import transaction
from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from corpus import tallies
from corpus.models import THREE_WAY, Dataset, Genre, Pair, Premise, PremiseStatus, Split

from .models import WritingClaim
from .writing_claims import lock_order_rows

UNASSIGNED = ""
SPLITS = (Split.TRAIN, Split.DEV, Split.TEST, UNASSIGNED)
# One writing is one hypothesis per label.
PAIRS_PER_WRITING = len(THREE_WAY)


class SplitAssignmentError(Exception):
    pass


def _per_split() -> dict[str, int]:
    return dict.fromkeys(SPLITS, 0)


@dataclass
class GenreSplit:
    genre: str
    is_training: bool
    counts: dict[str, int] = field(default_factory=_per_split)  # premises per split
    pairs: dict[str, int] = field(default_factory=_per_split)  # pairs per split, those still to be written included
    kept: int = 0  # premises already written on, whose split did not move


@dataclass
class SplitReport:
    dataset: str
    seed: int
    dev_target: int
    test_target: int
    genres: list[GenreSplit] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def totals(self, unit: str = "counts") -> dict[str, int]:
        """Premises (unit "counts") or pairs (unit "pairs") per split over all genres."""
        totals = _per_split()
        for row in self.genres:
            per_split: dict[str, int] = getattr(row, unit)
            for split, n in per_split.items():
                totals[split] += n
        return totals

    def lines(self) -> list[str]:
        columns = "".join(f" {name:>17}" for name in ("train", "dev", "test", "unassigned"))
        header = f"{'genre':<16} {'kind':<9}{columns} {'kept':>6}"
        out = [
            f"Splits of dataset '{self.dataset}' (seed {self.seed}; {self.dev_target} dev and {self.test_target} "
            f"test pairs per genre). Each cell: pairs / premises; pairs include those still to be written "
            f"({PAIRS_PER_WRITING} per writing). 'kept': premises written on already, split unchanged.",
            header,
            "-" * len(header),
        ]

        def cells(pairs: dict[str, int], premises: dict[str, int]) -> str:
            return "".join(f" {f'{pairs[split]:,} / {premises[split]:,}':>17}" for split in SPLITS)

        for row in self.genres:
            kind = "matched" if row.is_training else "held-out"
            out.append(f"{row.genre:<16} {kind:<9}{cells(row.pairs, row.counts)} {row.kept:>6}")
        out.append("-" * len(header))
        out.append(
            f"{'total':<16} {'':<9}{cells(self.totals('pairs'), self.totals())} {sum(r.kept for r in self.genres):>6}"
        )
        out.extend(f"note: {note}" for note in self.notes)
        return out


def written_on(queryset: QuerySet[Premise]) -> QuerySet[Premise]:
    """Premises somebody has written on or holds a claim for: their split must not move."""
    return queryset.filter(
        Q(writings_done__gt=0)
        | Exists(Pair.objects.filter(premise=OuterRef("pk")))
        | Exists(WritingClaim.objects.filter(premise=OuterRef("pk")))
    )


def assign_splits(dataset: "Dataset | str", dev: int = 2000, test: int = 2000, seed: int = 0) -> "SplitReport":
    """Assign every premise of `dataset` (a slug or row) to a split; returns a SplitReport."""
    if dev < 0 or test < 0:
        raise SplitAssignmentError("--dev and --test must be 0 or more.")
    if not isinstance(dataset, Dataset):
        try:
            dataset = Dataset.objects.get(slug=dataset)
        except Dataset.DoesNotExist:
            known = ", ".join(Dataset.objects.values_list("slug", flat=True)) or "none"
            raise SplitAssignmentError(f"Unknown dataset '{dataset}'. Known datasets: {known}") from None
    report = SplitReport(dataset=dataset.slug, seed=seed, dev_target=dev, test_target=test)
    genre_ids = Premise.objects.filter(dataset=dataset).values_list("genre_id", flat=True).distinct()
    genres = list(Genre.objects.filter(pk__in=genre_ids).order_by("slug"))
    if not genres:
        raise SplitAssignmentError(f"Dataset '{dataset.slug}' has no premises; import some first.")
    with transaction.atomic():
        for genre in genres:
            report.genres.append(_assign_genre(dataset, genre, dev, test, seed, report.notes))
        shared = sentences_in_two_splits(dataset)
        if shared:
            report.notes.append(
                f"{shared} sentence(s) were imported into more than one genre and now stand in more than one "
                f"split; retire the extra copies (Premise.status) and run assign_splits again"
            )
    return report


def sentences_in_two_splits(dataset: Dataset) -> int:
    """Texts that occur in more than one split: only possible when one sentence was imported
    into two genres (import keeps sentences unique within a genre, not across genres)."""
    return (
        Premise.objects.filter(dataset=dataset)
        .exclude(split=UNASSIGNED)
        .values("text_hash")
        .annotate(splits=Count("split", distinct=True))
        .filter(splits__gt=1)
        .count()
    )


def _take(free: list[int], weights: dict[int, int], target: int) -> list[int]:
    """The first premises of `free` whose pairs reach `target` (the last one may pass it)."""
    taken: list[int] = []
    pairs = 0
    for pk in free:
        if pairs >= target:
            break
        taken.append(pk)
        pairs += weights[pk]
    return taken


def _assign_genre(
    dataset: Dataset, genre: Genre, dev_target: int, test_target: int, seed: int, notes: list[str]
) -> GenreSplit:
    premises = Premise.objects.filter(dataset=dataset, genre=genre)
    # Row locks keep a worker from claiming a premise while its split moves: the premises' (NO KEY,
    # as a claim's insert key-shares them), then their claim-order rows, which claimers lock.
    # Ordering by pk only fixes the locking order; the draw is ordered by promptID.
    rows = list(
        premises.select_for_update(no_key=True).order_by("pk").values_list("pk", "prompt_id", "split", "status")
    )
    lock_order_rows([pk for pk, *_ in rows])
    written = set(written_on(premises).values_list("pk", flat=True))
    existing = dict(
        Pair.objects.filter(premise__in=premises).values_list("premise_id").annotate(n=Count("pk")).order_by()
    )
    expected = PAIRS_PER_WRITING * dataset.writings_per_premise
    weights = {pk: max(existing.get(pk, 0), expected) for pk, *_ in rows}

    row = GenreSplit(genre=genre.slug, is_training=genre.is_training)
    fixed: dict[str, int] = {Split.TRAIN: 0, Split.DEV: 0, Split.TEST: 0}
    candidates: list[tuple[str, int]] = []  # (prompt id, premise pk)
    retired: list[int] = []
    for pk, prompt_id, split, status in rows:
        if pk in written and split:
            fixed[split] += weights[pk]
            row.kept += 1
        elif status == PremiseStatus.RETIRED:
            retired.append(pk)
        else:
            candidates.append((prompt_id, pk))
    # Sorting in Python, not in the database: collations differ between servers (and locales), and
    # the same seed must give the same splits on every one.
    candidates.sort()
    random.Random(f"{seed}:{genre.slug}").shuffle(candidates)
    free = [pk for _, pk in candidates]

    dev = _take(free, weights, dev_target - fixed[Split.DEV])
    test = _take(free[len(dev) :], weights, test_target - fixed[Split.TEST])
    rest = free[len(dev) + len(test) :]
    assignments = {Split.DEV: dev, Split.TEST: test, Split.TRAIN: [], UNASSIGNED: list(retired)}
    assignments[Split.TRAIN if genre.is_training else UNASSIGNED].extend(rest)
    for split, ids in assignments.items():
        for start in range(0, len(ids), 900):  # bounded statements: a genre may have any number of premises
            moving = Premise.objects.filter(pk__in=ids[start : start + 900]).exclude(split=split)
            tallies.premises_moving(moving, split)  # counts per split follow (the cost page's too), in this transaction
            moving.update(split=split)

    for pk, split in premises.values_list("pk", "split"):
        row.counts[split] += 1
        row.pairs[split] += weights[pk] if pk not in retired else existing.get(pk, 0)
    for split, target in ((Split.DEV, dev_target), (Split.TEST, test_target)):
        if row.pairs[split] < target:
            notes.append(f"{genre.slug}: only {row.pairs[split]} of {target} {split} pairs (not enough premises)")
        elif row.pairs[split] > target + expected:
            notes.append(
                f"{genre.slug}: {row.pairs[split]} {split} pairs, over the {target} asked for, "
                f"because premises already written on keep their split"
            )
    if not genre.is_training and row.counts[Split.TRAIN]:
        notes.append(
            f"{genre.slug} is held out but {row.counts[Split.TRAIN]} of its premises are in train: they were "
            f"written on before the genre was marked held out; move them by hand if their pairs may go"
        )
    if not genre.is_training and row.counts[UNASSIGNED]:
        notes.append(f"{genre.slug}: {row.counts[UNASSIGNED]} premises left unassigned (held-out genres have no train)")
    return row
