"""Writing checks, a use of its own, off by default: a model judges each written pair, is the
hypothesis nonsense, does it fit the writer's intended label? Stored per pair (`WritingCheck`),
never as a label: it moves no gold and no count. Researchers read it beside the typing evidence;
participants never see it. An endpoint must answer one JSON object `{"verdict":
"fits|does-not-fit|nonsense", "reason": ...}`, read strictly (`parse_verdict`); a training run
cannot say "nonsense": its "does not fit" is its label differing from the intended one. The checks
are made by a labelling job whose task is "writing" (`services.start_labelling`).
"""

from collections.abc import Collection, Iterable, Sequence
from typing import Any

from corpus.labels import to_scheme
from corpus.models import Pair

from .clients import EndpointAsker, RunAsker, read_answer, stored_label
from .models import AnnotatorKind, ModelAnnotator, ModelUse, Outcome, TaskKind, Verdict, WritingCheck
from .prompts import fill, parse_verdict, with_data_notice


def writing_checker(annotator: ModelAnnotator) -> Any:
    """A callable (pairs, asked-with key) -> unsaved WritingCheck rows."""
    return _RunChecker(annotator) if annotator.kind == AnnotatorKind.RUN else _EndpointChecker(annotator)


class _EndpointChecker(EndpointAsker):
    def __init__(self, annotator: ModelAnnotator) -> None:
        super().__init__(annotator, TaskKind.WRITING)

    def __call__(self, pairs: Sequence[Pair], key: str) -> list[WritingCheck]:
        rows = []
        for pair in pairs:
            intended = to_scheme(pair.dataset.label_scheme, pair.author_label)
            answer = self.endpoint.ask(
                with_data_notice(self.prompt.system),
                fill(self.prompt.template, pair.premise.text, pair.hypothesis, intended),
            )
            row = WritingCheck(annotator=self.annotator, pair=pair, asked_with=key, intended_label=pair.author_label)
            row.verdict = read_answer(row, answer, parse_verdict)
            rows.append(row)
        return rows


class _RunChecker(RunAsker):
    def __call__(self, pairs: Sequence[Pair], key: str) -> list[WritingCheck]:
        predicted = self.model.predict_many_with_probability([(pair.premise.text, pair.hypothesis) for pair in pairs])
        rows = []
        for pair, (word, probability) in zip(pairs, predicted, strict=True):
            label = stored_label(word)
            row = WritingCheck(
                annotator=self.annotator,
                pair=pair,
                asked_with=key,
                intended_label=pair.author_label,
                model_label=label,
                probability=round(probability, 4),
                raw_answer=word,
            )
            if label:
                row.outcome = Outcome.LABELLED
                row.verdict = Verdict.FITS if label == pair.author_label else Verdict.DOES_NOT_FIT
            else:
                row.outcome = Outcome.UNPARSEABLE
            rows.append(row)
        return rows


def checks_of_pairs(pairs: Sequence[tuple[int, int]]) -> dict[int, list[dict[str, Any]]]:
    """{pair pk: [check]} of the pairs, given as (pair pk, dataset pk), whose study turned writing
    checks on with this annotator: the latest check of each pair by that annotator (a researcher's
    page only)."""
    chosen = dict(
        ModelUse.objects.filter(
            writing_checks_annotator__isnull=False, study__dataset_id__in={dataset for _, dataset in pairs}
        ).values_list("study__dataset_id", "writing_checks_annotator_id")
    )
    wanted = [pk for pk, dataset in pairs if dataset in chosen]
    annotators = set(chosen.values())
    rows = (
        WritingCheck.objects.filter(pair_id__in=wanted, annotator_id__in=annotators)
        .order_by("pair_id", "annotator_id", "-created_at", "-pk")
        .distinct("pair_id", "annotator_id")  # the latest check of each pair by each annotator
        .values(
            "pair_id",
            "annotator_id",
            "annotator__name",
            "outcome",
            "verdict",
            "reason",
            "model_label",
            "probability",
            "asked_with",
        )
    )
    checks: dict[int, list[dict[str, Any]]] = {}
    for row in rows:
        checks.setdefault(row["pair_id"], []).append(
            {
                "model": row["annotator__name"],
                "outcome": row["outcome"],
                "verdict": row["verdict"],
                "verdict_words": Verdict(row["verdict"]).label if row["verdict"] else "",
                "reason": row["reason"],
                "model_label": row["model_label"],
                "probability": row["probability"],
                "asked_with": row["asked_with"],
            }
        )
    return checks


def writing_check_annotators() -> list[int]:
    """The annotators some study chose for writing checks."""
    chosen = ModelUse.objects.filter(writing_checks_annotator__isnull=False)
    return sorted(set(chosen.values_list("writing_checks_annotator_id", flat=True)))


def checks_by_writer(worker_ids: Iterable[int], annotators: Collection[int] | None = None) -> dict[int, dict[str, int]]:
    """{writer pk: {"checked": pairs checked, "flagged": of them judged nonsense or not fitting}} by
    the annotators a study chose for writing checks (the workers page, beside the typing flags);
    `annotators`: those annotators when the caller has read them."""
    from django.db.models import Count, Q

    chosen = writing_check_annotators() if annotators is None else list(annotators)
    rows = (
        WritingCheck.objects.filter(
            pair__author_id__in=list(worker_ids), annotator_id__in=chosen, outcome=Outcome.LABELLED
        )
        .values("pair__author_id")
        .annotate(
            checked=Count("pair", distinct=True), flagged=Count("pair", filter=~Q(verdict=Verdict.FITS), distinct=True)
        )
        .order_by()
    )
    return {row["pair__author_id"]: {"checked": row["checked"], "flagged": row["flagged"]} for row in rows}
