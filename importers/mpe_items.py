"""MPE in the database: importing and exporting MPE's TSV, and building items from captions.

The file format and the paper's rules are `importers.mpe` (pure Python); this module maps them
onto the core:

- An MPE item is a `Premise` whose `sentences` are the four captions, in the file's order, each
  with its provenance (``{"text": ..., "source": "4818829454.jpg#0"}``), and whose `text` is the
  four joined by a space (the documented baseline form), plus one `Pair` (the hypothesis). The
  pair's `pair_id` is MPE's ID; its `word_overlap` is computed on import (`mpe.word_overlap`).
- The five judgments become five label rows. MPE publishes counts, not who said what, and has no
  author: the rows are written in the fixed order entailment, neutral, contradiction (positions 1–5)
  and `author_label` is the label in position 1. Author statistics ("gold = author") therefore
  mean nothing on an MPE dataset.
- The gold label is the file's. Where it is not the 3-of-5 majority of the judgments (every 2-2-1
  split, and the items MPE's researchers decided otherwise), it is kept as an adjudication from the
  file (`corpus.models.Adjudication`, source "file"): the pair's gold label is the file's and the
  judgments stay as they were, so an export gives back every row's gold label.
- Malformed lines are reported by their number and reason. By default a line whose only defect
  is a run of spaces where a tab belongs after the hypothesis (dev line 468) is repaired *and*
  reported; ``repair=False`` skips it instead.
"""

import os
import re
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction
from django.utils import timezone

from base.long_tasks import heartbeat
from corpus import bulk, tallies
from corpus.gold import VOTE_FIELD
from corpus.models import Dataset, Genre, ImportStatus, ItemKind, Pair, Premise, Split, joined_premise, text_hash

from . import mpe
from .formats import MAX_ID_CHARS, SNLI_GENRE, split_from_filename
from .models import CorpusImport
from .services import (
    CHUNK_SIZE,
    FILLED_MODELS,
    PAIR_SEARCH_TABLE,
    CorpusImportError,
    ensure_premises,
    imported_dataset,
    present_pair_ids,
    shown_problems,
    start_import,
    store_imported_pairs,
)

# {scene: [(caption number, caption text, [hypotheses written for it])]}
Scenes = Mapping[str, list[tuple[int, str, list[str]]]]


@dataclass
class MpeImportReport:
    path: str
    dataset: str
    split: str
    items_read: int = 0
    pairs_created: int = 0
    premises_created: int = 0
    labels_created: int = 0
    already_present: int = 0
    file_adjudications: int = 0  # items whose file gold is not the majority of their judgments
    problems: list[tuple[int, str, bool]] = field(default_factory=list)  # (line, reason, repaired)
    seconds: float = 0.0
    import_id: int | None = None

    @property
    def skipped(self) -> list[tuple[int, str, bool]]:
        return [problem for problem in self.problems if not problem[2]]

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        lines = [
            f"{self.path} -> dataset {self.dataset}, split {self.split}: {self.items_read} items read "
            f"in {self.seconds:.1f} s (import #{self.import_id})",
            f"  items created: {self.pairs_created} (premise sets {self.premises_created}, judgments {self.labels_created})",
            f"  items already present, skipped: {self.already_present}",
            f"  gold labels kept from the file where they are not the judgments' majority: {self.file_adjudications}",
            f"  malformed lines: {len(self.problems)} ({len(self.skipped)} skipped, "
            f"{len(self.problems) - len(self.skipped)} repaired)",
        ]
        marked = [
            (line, reason + (" (repaired: imported)" if repaired else " (skipped)"))
            for line, reason, repaired in self.problems
        ]
        return "\n".join(lines + shown_problems(marked))


def mpe_dataset(dataset: Dataset | str) -> Dataset:
    """The dataset, created as an imported multi-premise dataset if missing. One holding
    single-premise pairs is refused: MPE items would join its validation batches."""
    refusal = "dataset {dataset.slug} holds single-premise pairs; import MPE into a dataset of its own"
    return imported_dataset(dataset, CorpusImportError, refusal, item_kind=ItemKind.MULTI_PREMISE)


def premise_prompt_id(premises: Sequence[mpe.MpePremise]) -> str:
    """One id per set of captions: "4818829454.jpg#0-1-3-4/1a2b3c4d", the image, its caption numbers
    and a short hash of the four texts (MPE's files give one caption id different texts now and then:
    dev lines 128 and 423 spell "senior" and "senor")."""
    images = {premise.image_id for premise in premises}
    numbers = "-".join(str(premise.caption_number) for premise in premises)
    digest = text_hash("\t".join(premise.as_field() for premise in premises))
    prompt_id = f"{next(iter(images))}#{numbers}/{digest[:8]}" if len(images) == 1 else ""
    if not prompt_id or len(prompt_id) > MAX_ID_CHARS:
        prompt_id = "mpe-" + digest[:40]
    return prompt_id


def sentences_of(premises: Iterable[mpe.MpePremise]) -> list[dict[str, str]]:
    return [{"text": premise.text, "source": premise.prefix[:-1]} for premise in premises]


def judgment_labels(judgments: mpe.Judgments) -> list[str]:
    """Five labels in the fixed order entailment, neutral, contradiction (see the module's docstring)."""
    return [label for label in mpe.LABELS for _ in range(judgments.count(label))]


def import_mpe_file(
    path: str | Path, dataset: Dataset | str, split: str | None = None, repair: bool = True, genre: str = SNLI_GENRE
) -> MpeImportReport:
    """Import one MPE TSV file into a multi-premise dataset; returns an `MpeImportReport`.

    Items whose ID is already in the dataset are skipped, so importing a file twice changes nothing.
    """
    started = time.monotonic()
    path = str(path)
    if not Path(path).is_file():
        raise CorpusImportError(f"no such file: {path}")
    split = split or split_from_filename(path)
    if split not in Split.values:
        raise CorpusImportError(f"cannot tell the split of {Path(path).name}: pass --split")
    genre_obj = Genre.objects.filter(slug=genre).first()
    if genre_obj is None:
        raise CorpusImportError(f"unknown genre {genre!r}")
    try:
        parsed = mpe.read_mpe(path, repair=repair)
    except mpe.MpeFormatError as error:
        raise CorpusImportError(str(error)) from None
    dataset = mpe_dataset(dataset)
    record = start_import(dataset, path, split)
    report = MpeImportReport(
        path=path, dataset=dataset.slug, split=split, items_read=len(parsed.items), import_id=record.pk
    )
    report.problems = [(problem.line, problem.reason, problem.repaired) for problem in parsed.problems]
    items = _unique_items(parsed.items, report)
    try:
        # The tables vacuumed and analysed once the last chunk has committed (corpus.bulk).
        with (
            heartbeat(CorpusImport, record.pk),
            bulk.refreshed_when_committed(*FILLED_MODELS, tables=[PAIR_SEARCH_TABLE]),
        ):
            for start in range(0, len(items), CHUNK_SIZE):
                # Each chunk's premises, items, judgments and file adjudications commit together,
                # its tally deltas netted per key.
                with transaction.atomic(), tallies.deltas_gathered():
                    _store_chunk(
                        dataset, split, genre_obj, Path(path).name[:255], items[start : start + CHUNK_SIZE], report
                    )
    except Exception as error:
        CorpusImport.objects.filter(pk=record.pk).update(
            status=ImportStatus.FAILED,
            error=str(error) or type(error).__name__,
            finished_at=timezone.now(),
            pairs_created=report.pairs_created,
        )
        raise
    report.problems.sort()
    report.seconds = time.monotonic() - started
    CorpusImport.objects.filter(pk=record.pk).update(
        status=ImportStatus.DONE,
        finished_at=timezone.now(),
        bytes_read=os.path.getsize(path),
        lines_read=max([1, *(item.line for item in parsed.items), *(problem.line for problem in parsed.problems)]),
        pairs_created=report.pairs_created,
        premises_created=report.premises_created,
        labels_created=report.labels_created,
        already_present=report.already_present,
        malformed_count=len(report.problems),
        problems=[[line, reason + (" (repaired)" if repaired else "")] for line, reason, repaired in report.problems][
            : CorpusImport.PROBLEMS_KEPT
        ],
    )
    return report


def _unique_items(items: Iterable[mpe.MpeItem], report: MpeImportReport) -> list[mpe.MpeItem]:
    seen: dict[str, int] = {}
    kept = []
    for item in items:
        if len(item.item_id) > MAX_ID_CHARS:
            report.problems.append((item.line, f"ID is longer than {MAX_ID_CHARS} characters", False))
        elif item.item_id in seen:
            report.problems.append((item.line, f"ID {item.item_id} repeats line {seen[item.item_id]}", False))
        else:
            seen[item.item_id] = item.line
            kept.append(item)
    return kept


def _store_chunk(
    dataset: Dataset, split: str, genre: Genre, source: str, items: Sequence[mpe.MpeItem], report: MpeImportReport
) -> None:
    present = present_pair_ids(dataset, (item.item_id for item in items))
    report.already_present += len(present)
    items = [item for item in items if item.item_id not in present]
    if not items:
        return
    prompt_ids = {item.line: premise_prompt_id(item.premises) for item in items}
    wanted: dict[str, Premise] = {}
    for item in items:
        if prompt_ids[item.line] not in wanted:  # the first line of a set of captions gives its premise
            sentences = sentences_of(item.premises)
            wanted[prompt_ids[item.line]] = Premise(
                dataset=dataset,
                genre=genre,
                prompt_id=prompt_ids[item.line],
                text=joined_premise(sentence["text"] for sentence in sentences),
                sentences=sentences,
                split=split,
                source=source,
            )
    known, premises_created = ensure_premises(dataset, wanted, "sentences", "split")
    report.premises_created += premises_created

    pairs: list[Pair] = []
    labels: list[list[str]] = []
    kept: list[mpe.MpeItem] = []
    for item in items:
        premise_pk, sentences, premise_split = known[prompt_ids[item.line]]
        if sentences != sentences_of(item.premises):
            report.problems.append(
                (item.line, f"captions {prompt_ids[item.line]} differ from an earlier line's", False)
            )
            continue
        if premise_split != split:
            report.problems.append(
                (item.line, f"captions {prompt_ids[item.line]} are already in split {premise_split}", False)
            )
            continue
        item_labels = judgment_labels(item.judgments)
        majority = mpe.majority_label(item.judgments)
        pairs.append(
            Pair(
                premise_id=premise_pk,
                pair_id=item.item_id,
                hypothesis=item.hypothesis,
                author_label=item_labels[0],
                word_overlap=mpe.word_overlap(item.premises, item.hypothesis),
                adjudicated_label="" if item.gold_label == majority else item.gold_label,
                imported_gold=item.gold_label if item.gold_label in VOTE_FIELD else "",
            )
        )
        labels.append(item_labels)
        kept.append(item)
    created = store_imported_pairs(
        dataset,
        split,
        pairs,
        labels,
        adjudication_reasons=[
            mpe.adjudication_reason(item.judgments) or "gold differs from the majority" for item in kept
        ],
    )
    report.pairs_created += len(created)
    report.labels_created += sum(len(item_labels) for item_labels in labels)
    report.file_adjudications += sum(bool(pair.adjudicated_label) for pair in created)


# --- export ----------------------------------------------------------------------------------


def items_for_export(dataset: Dataset | str, split: str | None = None) -> Iterator[mpe.MpeItem]:
    """MpeItem per pair of the dataset (and split), by pair id: the file's order after an import."""
    dataset = dataset if isinstance(dataset, Dataset) else Dataset.objects.get(slug=dataset)
    pairs = Pair.objects.filter(dataset=dataset)
    if split:
        pairs = pairs.filter(premise__split=split)
    rows = pairs.order_by("pk").values_list(
        "pair_id",
        "premise__sentences",
        "premise__text",
        "hypothesis",
        "entailment_votes",
        "neutral_votes",
        "contradiction_votes",
        "gold_label",
    )
    for pair_id, sentences, text, hypothesis, e, n, c, gold in rows.iterator(chunk_size=2000):
        premises = (
            tuple(_premise_from(sentence) for sentence in sentences) if sentences else (mpe.MpePremise("", 0, text),)
        )
        yield mpe.MpeItem(0, pair_id, premises, hypothesis, mpe.Judgments(e, n, c), gold)


def _premise_from(sentence: Mapping[str, Any]) -> mpe.MpePremise:
    image_id, _, number = sentence["source"].rpartition("#")
    return mpe.MpePremise(image_id, int(number or 0), sentence["text"])


def export_mpe(dataset: Dataset | str, path: str | Path, split: str | None = None) -> int:
    """Write the dataset's items (optionally one split) as MPE TSV; returns how many were written.

    Counts are the judgments that count (an excluded worker's are left out, as everywhere) and the
    gold label is the pair's: the file's or a researcher's adjudication, else the majority.
    Items without a gold label (no majority and not adjudicated yet) are written with '-'.
    """
    dataset = dataset if isinstance(dataset, Dataset) else Dataset.objects.get(slug=dataset)
    if dataset.item_kind != ItemKind.MULTI_PREMISE:
        raise CorpusImportError(f"dataset {dataset.slug} holds single-premise pairs; MPE's format needs captions")
    items = list(items_for_export(dataset, split))
    mpe.write_mpe(path, items)
    return len(items)


# --- building items from captions ---------------------------------------------------------------


@dataclass
class BuildReport:
    scenes: int = 0
    candidates: int = 0
    kept: int = 0
    rejected_overlap: int = 0
    already_present: int = 0
    items: list[tuple[str, float]] = field(default_factory=list)  # (pair_id, overlap)

    def summary(self) -> str:
        return (
            f"scenes with enough captions: {self.scenes}; hypothesis candidates: {self.candidates}; "
            f"kept (overlap <= {mpe.OVERLAP_THRESHOLD}): {self.kept}; rejected for overlap: {self.rejected_overlap}; "
            f"already present: {self.already_present}"
        )


def scene_of(prompt_id: str) -> str | None:
    """A caption's scene: '4705552913.jpg#2' -> '4705552913.jpg' (FLICKR30K / SNLI captionID)."""
    scene, hash_sign, number = prompt_id.rpartition("#")
    return scene if hash_sign and number.isdigit() else None


def scenes_from_dataset(source: Dataset) -> dict[str, list[tuple[int, str, list[str]]]]:
    """{scene: [(caption number, caption text, [hypotheses written for it])]} from a caption dataset (SNLI)."""
    scenes: dict[str, list[tuple[int, str, list[str]]]] = {}
    premises = Premise.objects.filter(dataset=source).order_by("pk").values_list("pk", "prompt_id", "text")
    hypotheses: dict[int, list[str]] = {}
    for premise_pk, hypothesis in (
        Pair.objects.filter(dataset=source).order_by("pk").values_list("premise_id", "hypothesis")
    ):
        hypotheses.setdefault(premise_pk, []).append(hypothesis)
    for pk, prompt_id, text in premises:
        scene = scene_of(prompt_id)
        if scene is None:
            continue
        number = int(prompt_id.rpartition("#")[2])
        scenes.setdefault(scene, []).append((number, text, hypotheses.get(pk, [])))
    return scenes


def candidate_items(
    scenes: Scenes, premises_per_item: int = mpe.PREMISES_PER_ITEM
) -> Iterator[tuple[str, tuple[mpe.MpePremise, ...], str, float]]:
    """(scene, four MpePremise, hypothesis, overlap) per candidate, as MPE built them (§4.1).

    For a scene with more captions than premises, four captions are the premises (those without
    written hypotheses first, then by caption number; in caption-number order) and the hypotheses
    written for each remaining caption are the candidates.
    """
    for scene, captions in sorted(scenes.items()):
        captions = sorted(captions, key=lambda caption: caption[0])
        if len(captions) <= premises_per_item or not any(hypotheses for _, _, hypotheses in captions):
            continue
        chosen = sorted(
            sorted(captions, key=lambda caption: (bool(caption[2]), caption[0]))[:premises_per_item],
            key=lambda caption: caption[0],
        )
        premises = tuple(mpe.MpePremise(scene, number, text) for number, text, _ in chosen)
        for caption in captions:
            if caption in chosen:
                continue
            for hypothesis in caption[2]:
                yield scene, premises, hypothesis, mpe.word_overlap(premises, hypothesis)


_CAPTION_ID = re.compile(r"(?P<scene>[^#\t]+)#(?P<number>0|[1-9][0-9]*)")


def captions_from_file(path: str | Path) -> tuple[dict[str, dict[int, str]], list[tuple[int, str]]]:
    """({scene: {caption number: text}}, [(line, reason)]) from FLICKR30K's captions file
    (results_20130124.token: ``image.jpg#n<TAB>caption``) or from an MPE TSV (its premises)."""
    captions: dict[str, dict[int, str]] = {}
    problems: list[tuple[int, str]] = []
    with open(path, encoding="utf-8") as handle:
        first = handle.readline().rstrip("\n")
    if first == mpe.HEADER:
        for item in mpe.read_mpe(path, repair=True).items:
            for premise in item.premises:
                captions.setdefault(premise.image_id, {})[premise.caption_number] = premise.text
        return captions, problems
    with open(path, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            caption_id, tab, text = line.partition("\t")
            match = _CAPTION_ID.fullmatch(caption_id.strip())
            if not tab or not match or not text.strip():
                problems.append((number, "expected 'image.jpg#n<TAB>caption'"))
                continue
            captions.setdefault(match["scene"], {})[int(match["number"])] = text.strip()
    return captions, problems


def scenes_with_captions(
    captions: Mapping[str, Mapping[int, str]], source: Dataset
) -> dict[str, list[tuple[int, str, list[str]]]]:
    """Scenes of a captions file joined with the hypotheses `source` (SNLI) has for their captions."""
    scenes: dict[str, dict[int, tuple[str, list[str]]]] = {
        scene: {number: (text, []) for number, text in numbered.items()} for scene, numbered in captions.items()
    }
    for scene, caption_list in scenes_from_dataset(source).items():
        if scene not in scenes:
            continue
        for number, text, hypotheses in caption_list:
            _known_text, known = scenes[scene].setdefault(number, (text, []))
            known.extend(hypotheses)
    return {
        scene: [(number, text, hypotheses) for number, (text, hypotheses) in numbered.items()]
        for scene, numbered in scenes.items()
    }


def build_mpe_items(
    source: Dataset | str,
    target: Dataset | str,
    split: str = Split.DEV,
    threshold: float = mpe.OVERLAP_THRESHOLD,
    genre: str = SNLI_GENRE,
) -> BuildReport:
    """Build multi-premise items in `target` from the captions of `source`, keeping only candidates
    whose word overlap is at most `threshold`; each kept item waits for five judgments.

    Returns a `BuildReport`. The overlap is stored on each item's pair (shown in the admin and on
    the dashboard's MPE page). Building twice adds nothing.
    """
    source = source if isinstance(source, Dataset) else Dataset.objects.get(slug=source)
    return build_items_from_scenes(
        scenes_from_dataset(source),
        target,
        split=split,
        threshold=threshold,
        genre=genre,
        origin=f"built from {source.slug}",
    )


def build_items_from_scenes(
    scenes: Scenes,
    target: Dataset | str,
    split: str = Split.DEV,
    threshold: float = mpe.OVERLAP_THRESHOLD,
    genre: str = SNLI_GENRE,
    origin: str = "built from captions",
) -> BuildReport:
    """`build_mpe_items` for scenes given as {scene: [(caption number, text, [hypotheses])]}."""
    target = mpe_dataset(target)
    genre_obj = Genre.objects.get(slug=genre)
    report = BuildReport()
    report.scenes = sum(len(captions) > mpe.PREMISES_PER_ITEM for captions in scenes.values())
    kept: list[tuple[tuple[mpe.MpePremise, ...], str, float]] = []
    for _scene, premises, hypothesis, overlap in candidate_items(scenes):
        report.candidates += 1
        if overlap > threshold:
            report.rejected_overlap += 1
            continue
        kept.append((premises, hypothesis, overlap))
    with transaction.atomic():
        pairs: list[Pair] = []
        premise_pks: dict[str, int] = {}
        present = set(Pair.objects.filter(dataset=target).values_list("pair_id", flat=True))
        for premises, hypothesis, overlap in kept:
            prompt_id = premise_prompt_id(premises)
            pair_id = f"{prompt_id}/{text_hash(hypothesis)[:12]}"
            if pair_id in present:
                report.already_present += 1
                continue
            present.add(pair_id)
            if prompt_id not in premise_pks:
                sentences = sentences_of(premises)
                premise, _ = Premise.objects.get_or_create(
                    dataset=target,
                    prompt_id=prompt_id,
                    defaults={
                        "genre": genre_obj,
                        "text": joined_premise(s["text"] for s in sentences),
                        "sentences": sentences,
                        "split": split,
                        "source": origin[:255],
                    },
                )
                premise_pks[prompt_id] = premise.pk
            pairs.append(
                Pair(
                    premise_id=premise_pks[prompt_id],
                    pair_id=pair_id,
                    hypothesis=hypothesis,
                    author_label="",
                    word_overlap=overlap,
                )
            )
            report.items.append((pair_id, overlap))
        # No author and no labels yet: five judgments come from the MPE task.
        store_imported_pairs(target, split, pairs, [[] for _ in pairs], needs_validation=True)
        report.kept = len(pairs)
    return report
