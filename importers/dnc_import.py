"""DNC (Poliak et al. 2018) in the database: import `*_data.json` with its `*_metadata.json`, export
both again, and export a DNC dataset in the MultiNLI format through a snapshot.

- One dataset per recast (dev and train files of one recast share it: `dnc-sentiment`), with the
  file's label scheme: two-way (entailed / not-entailed), ordinal 1–5 (kg_relations) or three-way
  (the function-word files of Kim et al. 2019). Labels are stored as corpus.labels describes: the
  author label row (position 1, no worker) holds the core label, and for ordinal pairs the rating
  too, so gold labels, statistics and snapshots treat them like any other label.
- A context becomes a premise (promptID `ctx-` + 16 hex digits of its text's SHA-256), a pair is
  its DNC pair-id (exact text: contexts differing only in spaces stay apart), and the metadata goes to `corpus.PairProvenance` (corpus, corpus-sent-id,
  licence, creation approach, type of inference, plus both source objects as text), shown in the
  admin.
- Pairs are not queued for validation: the released label is DNC's gold, stored as the pair's
  `imported_gold`, so it is the gold label everywhere (gold source "imported") until a
  validation gives the pair a 3-of-5 majority.
- A file is imported in one transaction: all its pairs or none. Pairs already present are
  skipped, so importing a file twice changes nothing.
- Export: the pairs of a dataset and split, in pair-id order as read, rebuilt from the database
  (context from the premise, hypothesis from the pair, label from the author's label row, the
  rest from the stored objects) in the source file's JSON layout: the released files come back
  byte for byte.
"""

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from django.db import transaction

from corpus import bulk
from corpus import labels as scheme_labels
from corpus.models import (
    AUTHOR_POSITION,
    Dataset,
    Genre,
    LabelScheme,
    Pair,
    PairProvenance,
    Premise,
    PromptFamily,
    Split,
    ValidationLabel,
)
from corpus.services import set_needs_validation

from . import dnc
from .formats import text_of
from .services import PAIR_SEARCH_TABLE, ensure_premises, imported_dataset, store_imported_pairs

RECAST_FAMILY = "recast"
PYTHON2, PYTHON3 = "python2", "python3"
_STYLES = {PYTHON2: dnc.PYTHON2_STYLE, PYTHON3: dnc.PYTHON3_STYLE}
SCHEMES = {dnc.TWO_WAY: LabelScheme.TWO_WAY, dnc.ORDINAL: LabelScheme.ORDINAL, dnc.THREE_WAY: LabelScheme.THREE_WAY}


class DncImportError(Exception):
    """A DNC file that cannot be imported as a whole; the message says why and nothing was saved."""


@dataclass
class DncImportReport:
    path: str
    dataset: str
    split: str
    label_scheme: str
    pairs_created: int = 0
    premises_created: int = 0
    already_present: int = 0
    labels: dict[object, int] = field(default_factory=dict)  # label as in the file -> pairs

    def summary(self) -> str:
        counts = ", ".join(f"{label}: {n}" for label, n in sorted(self.labels.items(), key=lambda item: str(item[0])))
        return (
            f"{self.path} -> dataset {self.dataset} ({self.label_scheme}), split {self.split}: "
            f"{self.pairs_created} pairs created ({self.premises_created} premises), "
            f"{self.already_present} already present; labels {counts}"
        )


def dataset_slug_for(path: str | Path) -> str:
    """dev/recast_sentiment_data.json -> dnc-sentiment; function_words/NLI/nli-negation_data.json -> dnc-fw-negation."""
    stem = Path(path).name[: -len("_data.json")]
    if stem.startswith("recast_"):
        return "dnc-" + stem[len("recast_") :].replace("_", "-")
    if stem.startswith("nli-"):
        return "dnc-fw-" + stem[len("nli-") :]
    return "dnc-" + stem.replace("_", "-")


def _style_name(style: dnc.JsonStyle) -> str:
    return PYTHON3 if style.item_separator == "," else PYTHON2


def _genre_for(slug: str, type_of_inference: str) -> Genre:
    family, _ = PromptFamily.objects.get_or_create(
        slug=RECAST_FAMILY,
        defaults={
            "name": "Recast data",
            "instructions": "Pairs recast from another resource's annotations (DNC, Poliak et al. 2018); not written here.",
            "entailment_prompt": "entailed",
            "neutral_prompt": "not entailed",
            "contradiction_prompt": "not entailed",
        },
    )
    genre, _ = Genre.objects.get_or_create(
        slug=slug[:50], defaults={"name": (type_of_inference or slug)[:50], "is_training": True, "family": family}
    )
    return genre


def _dataset_for(slug: str, scheme: str) -> Dataset:
    refusal = (
        f"dataset {{dataset.slug}} holds {{dataset.label_scheme}} labels; this file's are {scheme}: "
        "import it into another dataset (--dataset)"
    )
    return imported_dataset(slug, DncImportError, refusal, label_scheme=scheme)


def import_dnc_file(
    data_path: str | Path, dataset: str | None = None, metadata_path: str | Path | None = None
) -> DncImportReport:
    """Import one DNC data file (and its metadata); returns a DncImportReport. All or nothing."""
    data_path = Path(data_path)
    if not data_path.is_file():
        raise DncImportError(f"no such file: {data_path}")
    try:
        source = dnc.read_dnc(data_path, metadata_path)
    except (dnc.DncFormatError, ValueError) as error:
        raise DncImportError(str(error)) from None
    if not source.pairs:
        raise DncImportError(f"{data_path}: no pairs")
    schemes = {pair.label_scheme for pair in source.pairs}
    splits = {pair.split for pair in source.pairs}
    if len(schemes) != 1:
        raise DncImportError(
            f"{data_path}: labels of several schemes ({', '.join(sorted(schemes))}); one file, one scheme"
        )
    if len(splits) != 1 or not splits <= set(Split.values):
        raise DncImportError(
            f"{data_path}: split {', '.join(sorted(map(str, splits)))}; one of {', '.join(Split.values)} expected"
        )
    scheme, split = SCHEMES[schemes.pop()], splits.pop()
    slug = dataset or dataset_slug_for(data_path)
    data_style = _style_name(source.data_style)
    metadata_style = _style_name(source.metadata_style) if source.metadata_style else ""
    with transaction.atomic():
        return store_dnc_pairs(source.pairs, slug, scheme, split, data_path, data_style, metadata_style)


def store_dnc_pairs(
    pairs: Sequence[dnc.DncPair],
    slug: str,
    scheme: str,
    split: str,
    source: str | Path,
    data_style: str = PYTHON2,
    metadata_style: str = "",
    genre: Genre | None = None,
) -> DncImportReport:
    """Save DncPairs (from a file or a recast) as premises, pairs, labels and provenance in the
    caller's transaction; pairs whose pair-id is already in the dataset are skipped. Returns the report.

    `genre`: an existing Genre for the premises; default one named after the dataset (family "recast")."""
    # One import in the caller's transaction: tally deltas netted per key, the tables vacuumed and
    # analysed once it commits (corpus.bulk).
    with bulk.bulk_import(Premise, Pair, ValidationLabel, PairProvenance, tables=[PAIR_SEARCH_TABLE]):
        report = DncImportReport(
            path=str(source),
            dataset=slug,
            split=split,
            label_scheme=scheme,
            labels=dict(Counter(pair.label for pair in pairs)),
        )
        dataset_obj = _dataset_for(slug, scheme)
        genre = genre or _genre_for(slug, pairs[0].type_of_inference if pairs else "")
        present = set(Pair.objects.filter(dataset=dataset_obj).values_list("pair_id", flat=True))
        new = [pair for pair in pairs if str(pair.pair_id) not in present]
        report.already_present = len(pairs) - len(new)
        premises = _premises(dataset_obj, genre, split, new, source, report)
        rows: list[Pair] = []
        label_lists: list[list[str]] = []
        ordinals: list[list[int | None]] = []
        provenance: list[PairProvenance] = []
        for pair in new:
            label, rating = scheme_labels.to_stored(scheme, pair.label)
            rows.append(
                Pair(
                    premise_id=premises[pair.context],
                    pair_id=str(pair.pair_id),
                    hypothesis=pair.hypothesis,
                    author_label=label,
                    imported_gold=label,  # DNC's label is its gold until validation decides
                )
            )
            label_lists.append([label])
            ordinals.append([rating])
        created = store_imported_pairs(
            dataset_obj, split, rows, label_lists, ordinals=ordinals if scheme == LabelScheme.ORDINAL else None
        )
        # The released label is DNC's gold: recast pairs are not queued for validation on import
        # (a researcher marks those to validate; until then `imported_gold` is the gold label).
        set_needs_validation(Pair.objects.filter(pk__in=[pair.pk for pair in created]), False)
        for pair, row in zip(new, created, strict=True):
            provenance.append(_provenance_row(row, pair, source, data_style, metadata_style))
        PairProvenance.objects.bulk_create(provenance, batch_size=1000)
        report.pairs_created = len(created)
    return report


def _premises(
    dataset: Dataset, genre: Genre, split: str, pairs: Sequence[dnc.DncPair], path: str | Path, report: DncImportReport
) -> dict[str, int]:
    """context -> premise pk, creating the missing premises; a context never crosses splits."""
    # The exact text, not text_hash (which folds whitespace): DNC has contexts that differ only in spaces.
    ids = {pair.context: "ctx-" + hashlib.sha256(pair.context.encode("utf-8")).hexdigest()[:16] for pair in pairs}
    wanted = {
        prompt_id: Premise(
            dataset=dataset, genre=genre, prompt_id=prompt_id, text=context, split=split, source=Path(path).name[:255]
        )
        for context, prompt_id in ids.items()
    }
    # The caller's transaction takes the premises just created back with the error.
    known, report.premises_created = ensure_premises(dataset, wanted, "split")
    crossing = sorted(prompt_id for prompt_id, (_, premise_split) in known.items() if premise_split != split)
    if crossing:
        raise DncImportError(f"{path}: context {crossing[0]} is already in another split of {dataset.slug}")
    return {context: known[prompt_id][0] for context, prompt_id in ids.items()}


def _provenance_row(
    pair_row: Pair, pair: dnc.DncPair, path: str | Path, data_style: str, metadata_style: str
) -> PairProvenance:
    data = dnc.data_record(pair)
    for key in ("context", "hypothesis", "label"):
        data[key] = None  # kept as a placeholder for the key order; the values live in their tables
    meta = pair.provenance
    return PairProvenance(
        pair_id=pair_row.pk,
        corpus=text_of(meta and meta.corpus)[:200],
        corpus_sent_id=text_of(meta and meta.corpus_sent_id)[:300],
        corpus_license=text_of(meta and meta.corpus_license)[:300],
        creation_approach=text_of(meta and meta.creation_approach)[:50],
        type_of_inference=pair.type_of_inference[:100],
        source=str(Path(*Path(path).parts[-3:]))[:255],
        json_style=data_style + (f"/{metadata_style}" if metadata_style and metadata_style != data_style else ""),
        data_record=json.dumps(data, ensure_ascii=False),
        metadata_record=json.dumps(dnc.metadata_record(pair), ensure_ascii=False) if meta else "",
    )


# --- export ----------------------------------------------------------------------------------


def _label_for_export(scheme: str, stored: str | None, rating: int | None) -> object:
    if scheme == LabelScheme.ORDINAL:
        return rating
    if stored is None:  # no author label row: None, as to_scheme would give it back
        return None
    return scheme_labels.to_scheme(scheme, stored)


def dnc_pairs(dataset: Dataset | str, split: str) -> tuple[list[dnc.DncPair], set[str]]:
    """The dataset's pairs of one split as importers.dnc.DncPair objects (with provenance), pair-id order as imported."""
    dataset = dataset if isinstance(dataset, Dataset) else Dataset.objects.get(slug=dataset)
    authors = {
        pair_id: (label, ordinal)
        for pair_id, label, ordinal in ValidationLabel.objects.filter(
            pair__dataset=dataset, pair__premise__split=split, position=AUTHOR_POSITION
        ).values_list("pair_id", "label", "ordinal")
    }
    rows = (
        Pair.objects.filter(dataset=dataset, premise__split=split)
        .order_by("pk")
        .values_list(
            "pk",
            "pair_id",
            "hypothesis",
            "premise__text",
            "provenance__data_record",
            "provenance__metadata_record",
            "provenance__json_style",
        )
    )
    pairs: list[dnc.DncPair] = []
    styles: set[str] = set()
    for pk, pair_id, hypothesis, context, data_text, metadata_text, style in rows.iterator(chunk_size=2000):
        stored, rating = authors.get(pk, (None, None))
        record: dict[str, Any] = json.loads(data_text) if data_text else dict.fromkeys(dnc.DATA_KEYS)
        record.update(
            {
                "context": context,
                "hypothesis": hypothesis,
                "label": _label_for_export(dataset.label_scheme, stored, rating),
            }
        )
        if not data_text:  # a pair made here (not imported): DNC's fields from what the platform knows
            label = record["label"]
            record.update(
                {
                    "pair-id": int(pair_id) if pair_id.isdigit() else pair_id,
                    "split": split,
                    "binary-label": dnc.is_entailed(label),
                    "type-of-inference": "",
                    "label-set": None,
                }
            )
        pair = dnc.pair_from_record(record, f"pair {pair_id}")
        if metadata_text:
            pair.provenance = dnc.provenance_from_record(json.loads(metadata_text), f"pair {pair_id} metadata")
        pairs.append(pair)
        styles.add(style or PYTHON2)
    return pairs, styles


def export_dnc(
    dataset: Dataset | str, split: str, data_path: str | Path, metadata_path: str | Path | None = None
) -> int:
    """Write a dataset's split as DNC data (and metadata) files; returns the number of pairs.

    The JSON layout is the imported file's (python2: DNC's recast files, python3: function_words).
    """
    pairs, styles = dnc_pairs(dataset, split)
    style = sorted(styles)[0] if styles else PYTHON2
    data_style, _, metadata_style = style.partition("/")
    has_metadata = all(pair.provenance is not None for pair in pairs) and pairs
    dnc.write_dnc(
        pairs,
        data_path,
        metadata_path if has_metadata else None,
        _STYLES[data_style],
        _STYLES[metadata_style or data_style],
    )
    return len(pairs)
