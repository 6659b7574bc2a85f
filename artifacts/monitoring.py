"""The artifact monitor on the database: refreshes (stored figures and model), triggers, scoring.

The fitting itself is `artifacts.monitor` (numpy and scikit-learn); refreshes run in Celery
workers or the `refresh_monitor` command. Scoring a draft only loads the stored arrays (numpy),
once per process and again when a newer refresh is done: no spaCy, no torch, no scikit-learn.
Which refresh is newest comes from the cache (set by the refresh), so scoring queries nothing.
"""

import logging
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.utils import timezone

from base.long_tasks import JobStatus, heartbeat
from base.task_queue import enqueue
from corpus.giveaways import counted_label
from corpus.models import Dataset, Pair
from corpus.scope import EVERYTHING, Scope
from corpus.selectors import pairs_in

from .models import MonitorRefresh
from .monitor import ScoringModel, monitor
from .tag_tally import tally_pairs

logger = logging.getLogger(__name__)

REFRESH_TASK = "artifacts.refresh_monitor"


def monitor_rows(scope: Scope = EVERYTHING) -> Iterator[dict[str, Any]]:
    values = (
        pairs_in(scope)
        .values_list("hypothesis", "gold_label", "author_label", "label_count", "premise__genre__slug", "author_id")
        .order_by("pk")
        .iterator(chunk_size=10000)
    )
    for hypothesis, gold, author_label, label_count, genre, author in values:
        yield {
            "hypothesis": hypothesis,
            "label": counted_label(gold, author_label, label_count),
            "genre": genre,
            "writer": author,
        }


def model_dir() -> Path:
    path = Path(settings.DATA_DIR) / "artifacts"
    path.mkdir(parents=True, exist_ok=True)
    return path


def refresh_monitor(
    dataset: Dataset | None = None,
    trigger: str = MonitorRefresh.Trigger.COMMAND,
    folds: int = 5,
    seed: int = 0,
    **options: Any,
) -> MonitorRefresh:
    """Fit the monitor over the dataset's pairs and store its figures and model; returns the row.

    A refresh that cannot run (too few labelled hypotheses) is stored as failed with the reason.
    """
    started = time.monotonic()
    refresh = MonitorRefresh.objects.create(
        dataset=dataset, trigger=trigger, pairs_total=pairs_in(Scope.of_dataset(dataset)).count()
    )
    try:
        with heartbeat(MonitorRefresh, refresh.pk):
            figures, scoring = monitor(monitor_rows(Scope.of_dataset(dataset)), folds=folds, seed=seed, **options)
    except ValueError as error:
        return _finish(refresh, JobStatus.FAILED, started, error=str(error))
    except Exception as error:
        _finish(refresh, JobStatus.FAILED, started, error=f"{type(error).__name__}: {error}")
        raise
    assert scoring is not None  # fitted: no refresh passes fit_final=False
    path = model_dir() / f"monitor-{refresh.pk}.npz"
    scoring.save(path)
    refresh.pairs, refresh.folds = figures["pairs"], figures["folds"]
    refresh.overall, refresh.per_genre, refresh.writers = figures["overall"], figures["per_genre"], figures["writers"]
    refresh.flagged = sum(1 for writer in figures["writers"] if writer["flagged"])
    refresh.model_file = str(path)
    refresh = _finish(refresh, JobStatus.DONE, started)
    remember_latest(refresh)
    return refresh


def _finish(refresh: MonitorRefresh, status: str, started: float, error: str = "") -> MonitorRefresh:
    refresh.status, refresh.error = status, error
    refresh.seconds = round(time.monotonic() - started, 3)
    refresh.finished_at = timezone.now()
    refresh.save()
    if error:
        logger.warning("monitor refresh %s failed: %s", refresh.pk, error)
    return refresh


def refresh_if_due(dataset: Dataset, every: int | None = None) -> bool:
    """Queue a refresh when `every` (settings.ARTIFACTS_MONITOR_EVERY_PAIRS) pairs have come in
    since the last one; returns whether it did."""
    every = every or settings.ARTIFACTS_MONITOR_EVERY_PAIRS
    last = (
        MonitorRefresh.objects.filter(dataset=dataset).exclude(status=JobStatus.FAILED).order_by("-created_at").first()
    )
    seen = last.pairs_total if last else 0
    if tally_pairs(dataset) - seen < every:  # a sum of tally rows: a count of the pairs would read them all
        return False
    transaction.on_commit(lambda: enqueue(REFRESH_TASK, dataset.pk, MonitorRefresh.Trigger.NEW_PAIRS))
    return True


def periodic_refresh() -> None:
    """Every collected (not imported) dataset with pairs added since its last refresh."""
    for dataset in Dataset.objects.filter(is_imported=False):
        if Pair.objects.filter(dataset=dataset).exists():
            refresh_if_due(dataset, every=1)


# --- scoring drafts ----------------------------------------------------------------------------

# The latest refresh with a model: (refresh id, model file), or (None, None) when there is none.
ModelRef = tuple[int, str] | tuple[None, None]
_models: dict[
    int | None, tuple[int, str, ScoringModel]
] = {}  # dataset id → (refresh id, model file, ScoringModel), per process
# dataset id → (time.monotonic() of the last look at the cache, (refresh id, model file))
_checked: dict[int | None, tuple[float, ModelRef]] = {}
_lock = threading.Lock()
LATEST_TTL = 60  # seconds a process may go on scoring with an older model when its cache is its own
RECHECK = 2  # seconds between two looks at the shared cache for a newer refresh, per process


def _latest_key(dataset_id: int | None) -> str:
    return f"artifacts:monitor-latest:{dataset_id or 'all'}"


def remember_latest(refresh: MonitorRefresh) -> None:
    """Tell the scoring endpoint (through the cache, Redis when shared) which model is newest:
    this process at once, others within RECHECK seconds."""
    cache.set(_latest_key(refresh.dataset_id), (refresh.pk, refresh.model_file), LATEST_TTL)
    _checked.pop(refresh.dataset_id, None)


def latest_model_ref(dataset_id: int | None) -> ModelRef:
    """(refresh id, model file) of the dataset's latest done refresh with a model, or (None, None).

    From the cache, which a finished refresh sets at once; on a miss from the database, kept for
    LATEST_TTL seconds (the bound on staleness where each process has its own cache and the
    refresh ran in another process). Each process looks at the cache at most every RECHECK seconds."""
    now = time.monotonic()
    checked = _checked.get(dataset_id)
    if checked and now - checked[0] < RECHECK:
        return checked[1]
    key = _latest_key(dataset_id)
    ref = cache.get(key)
    if ref is None:
        ref = (
            # django-stubs types a foreign key's `_id` lookup without None; None is `IS NULL` (all datasets).
            MonitorRefresh.objects.filter(dataset_id=dataset_id, status=JobStatus.DONE)  # type: ignore[misc]
            .exclude(model_file="")
            .order_by("-created_at")
            .values_list("pk", "model_file")
            .first()
            or ()
        )
        cache.set(key, tuple(ref), LATEST_TTL)
    latest: ModelRef = tuple(ref) if ref else (None, None)
    _checked[dataset_id] = (now, latest)
    return latest


def cached_scoring_model(dataset_id: int | None) -> tuple[int, ScoringModel] | tuple[None, None]:
    """(refresh id, ScoringModel) of the dataset's latest done refresh, kept in this process's
    memory keyed by the refresh id; (None, None) when the monitor has not run yet or its file is
    gone. No database query while the cache knows the latest refresh: the scoring path."""
    refresh_id, model_file = latest_model_ref(dataset_id)
    if refresh_id is None or model_file is None:  # both or neither (ModelRef)
        return None, None
    cached = _models.get(dataset_id)
    if cached and cached[:2] == (refresh_id, model_file):
        return refresh_id, cached[2]
    with _lock:
        try:
            model = ScoringModel.load(model_file)
        except OSError:
            logger.warning("monitor model %s is missing", model_file)
            return None, None
        _models[dataset_id] = (refresh_id, model_file, model)
    return refresh_id, model


def scoring_model(dataset: Dataset | None) -> tuple[MonitorRefresh | None, ScoringModel | None]:
    """(MonitorRefresh, ScoringModel) of the dataset's latest done refresh; (None, None) when
    there is none. For pages and figures; the scoring endpoint uses `cached_scoring_model`."""
    refresh_id, model = cached_scoring_model(dataset.pk if dataset else None)
    if refresh_id is None:
        return None, None
    return MonitorRefresh.objects.filter(pk=refresh_id).first(), model


# --- the effect of the nudge -------------------------------------------------------------------

GUESSABLE_P = 0.8


def nudge_effect(scope: Scope = EVERYTHING) -> dict[str, Any]:
    """Guessability of submitted hypotheses by arm, scored by the monitor's current model:
    written with the nudge off (the comparison arm), on without a note, and on with a note
    (and of those, how many the worker revised). Only records whose hypothesis became a pair
    (same author, label and text) count. None when the monitor has no model yet."""
    from django.db.models import Exists, OuterRef

    from .models import NudgeRecord

    # A team's datasets have no model of their own: the global one scores their records.
    refresh, model = scoring_model(scope.one)
    records = NudgeRecord.objects.filter(
        Exists(
            Pair.objects.filter(
                author=OuterRef("worker"), author_label=OuterRef("label"), hypothesis=OuterRef("hypothesis")
            )
        )
    )
    records = scope.filter(records)
    arms: dict[str, dict[str, Any]] = {
        name: {"n": 0, "p_sum": 0.0, "guessable": 0, "revised": 0} for name in ("off", "no_note", "shown")
    }
    for label, text, enabled, shown, revised in records.values_list(
        "label", "hypothesis", "enabled", "shown", "revised"
    ):
        arm = arms["shown" if shown else "no_note" if enabled else "off"]
        arm["n"] += 1
        arm["revised"] += revised
        if model is not None:
            scored = model.score(text)
            p = scored["probabilities"][label]
            arm["p_sum"] += p
            arm["guessable"] += scored["predicted"] == label and p >= GUESSABLE_P
    for arm in arms.values():
        arm["mean_p"] = arm["p_sum"] / arm["n"] if arm["n"] and model is not None else None
        arm["guessable_share"] = arm["guessable"] / arm["n"] if arm["n"] and model is not None else None
        del arm["p_sum"]
    return {"refresh": refresh.pk if refresh else None, "threshold": GUESSABLE_P, "arms": arms}
