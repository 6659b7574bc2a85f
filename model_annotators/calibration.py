"""The annotator measured like a person on its calibration split (model_annotators.scope): catch
trials, leave-one-out agreement and Dawid–Skene confusions beside the humans, and against human
gold accuracy, Cohen's κ, Krippendorff's α, per-class precision and recall, a confusion matrix;
and what a thousand labels cost and take. Human gold (`Pair.gold_label`) counts human labels only.
An unparseable or failed answer counts as wrong in the accuracy (a vote is earned by answering).
"""

from collections import Counter, defaultdict
from decimal import Decimal
from typing import Any

from corpus.alpha import alpha_of_units
from corpus.labels import AUTHOR_POSITION, LABELS, NO_GOLD
from corpus.models import ValidationLabel
from corpus.selectors import labels_that_count
from quality.flags import PairVotes, Vote, worker_figures
from quality.models import ReferenceLabel

from .models import Calibration, ModelAnnotator, ModelLabel, Outcome
from .scope import asked_with, calibration_pairs

MODEL_WORKER = "model"  # the model's name among the crowd's worker ids in the shared statistics


def cohen_kappa(first: list[str], second: list[str]) -> float | None:
    """Cohen's κ of two raters over the same items."""
    n = len(first)
    if n == 0:
        return None
    observed = sum(a == b for a, b in zip(first, second, strict=True)) / n
    a_counts, b_counts = Counter(first), Counter(second)
    expected = sum(a_counts[label] * b_counts[label] for label in set(a_counts) | set(b_counts)) / (n * n)
    return None if expected >= 1 else (observed - expected) / (1 - expected)


def calibrate(annotator: ModelAnnotator) -> Calibration:
    """Measure the annotator on the labels of its current prompt (or run); the Calibration row."""
    key = asked_with(annotator)
    pairs = calibration_pairs(annotator)
    answers: dict[int, dict[str, Any]] = {
        row["pair_id"]: dict(row)
        for row in ModelLabel.objects.filter(annotator=annotator, asked_with=key, pair__in=pairs).values(
            "pair_id", "label", "outcome", "latency_ms", "input_tokens", "output_tokens"
        )
    }
    gold = dict(pairs.filter(pk__in=list(answers)).exclude(gold_label=NO_GOLD).values_list("pk", "gold_label"))
    figures: dict[str, Any] = {"asked_with": key, "answers": len(answers)}
    figures["outcomes"] = dict(Counter(row["outcome"] for row in answers.values()))
    figures.update(_against_gold(answers, gold))
    figures["catch_trials"] = _catch_trials(annotator, answers)
    human = _human_labels(list(gold))
    figures["leave_one_out"] = _leave_one_out(answers, human)
    figures["dawid_skene"] = _dawid_skene(answers, human)
    figures["per_thousand"] = _cost_and_latency(annotator, answers)
    return Calibration.objects.create(
        annotator=annotator, asked_with=key, pairs=len(gold), accuracy=figures["accuracy"], figures=figures
    )


def _against_gold(answers: dict[int, dict[str, Any]], gold: dict[int, str]) -> dict[str, Any]:
    scored = [(answers[pk]["label"], label) for pk, label in gold.items()]
    answered = [(model, truth) for model, truth in scored if model]
    confusion: dict[str, dict[str, int]] = {truth: dict.fromkeys(LABELS, 0) for truth in LABELS}
    for model, truth in answered:
        confusion.setdefault(truth, dict.fromkeys(LABELS, 0))[model] = confusion[truth].get(model, 0) + 1
    per_class = {}
    for label in LABELS:
        said = sum(1 for model, _ in answered if model == label)
        true = sum(1 for _, truth in scored if truth == label)
        hits = sum(1 for model, truth in answered if model == truth == label)
        if said or true:
            per_class[label] = {
                "precision": hits / said if said else None,
                "recall": hits / true if true else None,
                "support": true,
            }
    models = [model for model, _ in answered]
    truths = [truth for _, truth in answered]
    return {
        "gold_pairs": len(scored),
        "answered_gold_pairs": len(answered),
        "accuracy": sum(model == truth for model, truth in scored) / len(scored) if scored else None,
        "kappa": cohen_kappa(models, truths),
        "alpha": alpha_of_units([[m, t] for m, t in answered], LABELS).alpha if answered else None,
        "per_class": per_class,
        "confusion": confusion,  # gold -> the model's label -> pairs
    }


def _catch_trials(annotator: ModelAnnotator, answers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Scored as a validator's catch trials are (quality.catch_trials.score_catch_trials): the
    model's label against the researcher's reference label of each catch pair it answered."""
    expected = dict(
        ReferenceLabel.objects.filter(
            pair__dataset=annotator.dataset, is_catch_trial=True, pair__in=list(answers)
        ).values_list("pair_id", "label")
    )
    matched = sum(1 for pk, label in expected.items() if answers[pk]["label"] == label)
    return {"answered": len(expected), "matched": matched, "share": matched / len(expected) if expected else None}


def _human_labels(pair_ids: list[int]) -> dict[int, list[tuple[str, str]]]:
    """Each pair's counted human labels in position order, (worker id, label)."""
    by_pair: dict[int, list[tuple[str, str]]] = defaultdict(list)
    rows = (
        ValidationLabel.objects.filter(labels_that_count(), pair_id__in=pair_ids)
        .order_by("pair_id", "position", "pk")
        .values_list("pair_id", "worker_id", "label", "position")
    )
    for pair_id, worker_id, label, position in rows:
        # An imported label without a worker is its own one-label worker (as aggregation_runs does).
        who = f"w{worker_id}" if worker_id is not None else f"anon-{pair_id}-{position}"
        by_pair[pair_id].append((who, label))
    return by_pair


def _leave_one_out(answers: dict[int, dict[str, Any]], human: dict[int, list[tuple[str, str]]]) -> dict[str, Any]:
    """The model's agreement with the gold of the humans' labels, as the random-guesser flag
    scores a validator (quality.flags.worker_figures): its vote put after the humans'."""
    pairs = [
        PairVotes(
            pair_id=str(pk),
            votes=(*(Vote(worker, label) for worker, label in labels), Vote(MODEL_WORKER, answers[pk]["label"])),
        )
        for pk, labels in human.items()
        if answers[pk]["label"] and len(labels) > AUTHOR_POSITION
    ]
    figures = {row.worker: row for row in worker_figures(pairs)}
    model = figures.get(MODEL_WORKER)
    humans = [row.loo_agreement for worker, row in figures.items() if worker != MODEL_WORKER and row.loo_items >= 20]
    if model is None:
        return {"items": 0}
    return {
        "items": model.loo_items,
        "agreement": model.loo_agreement if model.loo_items else None,
        "chance": model.chance_agreement if model.loo_items else None,
        "human_median": sorted(humans)[len(humans) // 2] if humans else None,
    }


def _dawid_skene(answers: dict[int, dict[str, Any]], human: dict[int, list[tuple[str, str]]]) -> dict[str, Any]:
    rows = [(pk, worker, label) for pk, labels in human.items() for worker, label in labels]
    rows += [(pk, MODEL_WORKER, answers[pk]["label"]) for pk in human if answers[pk]["label"]]
    if not any(worker == MODEL_WORKER for _, worker, _ in rows) or len({pk for pk, _, _ in rows}) < 2:
        return {}
    import pandas as pd

    from quality.aggregation import dawid_skene

    result = dawid_skene(pd.DataFrame(rows, columns=["task", "worker", "label"]))
    assert result.worker_skill is not None and result.worker_confusion is not None
    skills = result.worker_skill.to_dict()
    confusion = result.worker_confusion.loc[MODEL_WORKER]
    human_skills = sorted(value for worker, value in skills.items() if worker != MODEL_WORKER)
    return {
        "skill": float(skills[MODEL_WORKER]),
        "skill_meaning": result.skill_meaning,
        # P(the model gives `given` | the pair is `true`): true -> given -> probability
        "confusion": {
            str(true): {str(given): round(float(confusion.loc[given, true]), 4) for given in confusion.index}
            for true in confusion.columns
        },
        "humans_below": sum(1 for value in human_skills if value < skills[MODEL_WORKER]),
        "humans": len(human_skills),
    }


def _cost_and_latency(annotator: ModelAnnotator, answers: dict[int, dict[str, Any]]) -> dict[str, Any]:
    n = len(answers)
    if not n:
        return {}
    tokens_in = sum(row["input_tokens"] for row in answers.values())
    tokens_out = sum(row["output_tokens"] for row in answers.values())
    cost = (
        Decimal(tokens_in) * annotator.price_per_million_input_tokens
        + Decimal(tokens_out) * annotator.price_per_million_output_tokens
    ) / Decimal(1_000_000)
    labelled = sum(1 for row in answers.values() if row["outcome"] == Outcome.LABELLED)
    return {
        "cost": float(cost * 1000 / n),
        "currency": annotator.currency,
        "seconds": sum(row["latency_ms"] for row in answers.values()) / n,  # ms per label = s per 1,000
        "labels_per_thousand_asked": labelled * 1000 / n,
    }


def latest_calibration(annotator: ModelAnnotator) -> Calibration | None:
    return annotator.calibrations.order_by("-created_at", "-pk").first()
