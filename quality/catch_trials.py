"""Catch trials (MultiNLI §2.1): researcher-labelled pairs mixed, unmarked, into validation batches.

The validation app, a layer above this one, calls `pick_catch_trials` when it claims a batch and
`score_catch_trials` when the batch is submitted (plain calls: quality is on the judgement floor).
The rules, and why each keeps a catch trial indistinguishable, are in docs/quality.md ("Catch
trials and bonuses"): served whole premise by premise, to at most `MAX_SERVINGS` participants, never
on a premise the worker met; an answer is a `CatchTrialAnswer`, never one of the pair's labels, and
a match in a study session earns the study's bonus (`quality.bonuses`) in the submit's transaction.
"""

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from math import comb
from typing import Any

from django.db.models import Count, Exists, IntegerField, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from corpus.models import AUTHOR_POSITION, LABELS_PER_PAIR, Dataset, Pair, ValidationLabel, Worker
from crowd.claiming import lock_rows
from crowd.models import Study, StudySession, TaskKind

from .bonuses import record_catch_bonuses
from .models import CatchTrialAnswer, ReferenceLabel

# An ordinary pair is labelled by its author and four validators: a pair is served as a catch trial to no more.
MAX_SERVINGS = LABELS_PER_PAIR - AUTHOR_POSITION

# The chance that a batch which may take a pair of an open catch premise takes one: ordinary premises
# miss some batches, and a catch premise taken by every batch was told by that. Calibrated on
# bench/attacks/catch_colluders.py (docs/quality.md, "Catch premises ...").
KEEP_CHANCE = 0.96

# The kinds of study whose batches carry catch trials (validation's claim serves them); a writing
# study's catch share means nothing.
CATCH_TASK_KINDS = frozenset({TaskKind.VALIDATION, TaskKind.MPE_JUDGMENT})


def catch_servings(claims: QuerySet[Any], *, of: str = "pk", by: str = "pair_id") -> Coalesce:
    """How many times each row's pair (or premise) was served as a catch trial: an annotation over
    pairs (`of` the outer row's field, `by` the claim's), counting the catch claims among `claims`
    (every validation claim, with `pair_id`) and nothing else."""
    return Coalesce(_count_of(claims.filter(is_catch_trial=True, **{by: OuterRef(of)}), by), Value(0))


def _count_of(rows: QuerySet[Any], by: str) -> Subquery:
    """How many of `rows` (filtered on an outer row) there are, as a subquery grouped `by` that field."""
    return Subquery(rows.order_by().values(by).annotate(n=Count("*")).values("n"), output_field=IntegerField())


def _marked(dataset_ids: Sequence[int] | None) -> QuerySet[ReferenceLabel]:
    """The pairs marked as catch trials, in these datasets (every dataset: None)."""
    marked = ReferenceLabel.objects.filter(is_catch_trial=True)
    return marked if dataset_ids is None else marked.filter(pair__dataset_id__in=dataset_ids)


def _ids(dataset: Dataset | None) -> list[int] | None:
    return None if dataset is None else [dataset.pk]


def _still_in_validation() -> Exists:
    """Whether a pair's premise (the outer row's `premise_id`) has a pair waiting in the validation queue."""
    return Exists(
        Pair.objects.filter(premise_id=OuterRef("premise_id"), needs_validation=True, label_count__lt=LABELS_PER_PAIR)
    )


def catch_premises(dataset_ids: Sequence[int] | None) -> list[int]:
    """The catch premises of these datasets (every dataset: None), read in a statement of their own
    (the marked pairs' partial index). The statements that use them get them as a list, not as a
    subquery: between an import and autovacuum's next ANALYZE the planner believes a new dataset
    holds next to no pair, and joined the subquery with a nested loop that walked the dataset's
    pairs once for every candidate (bench/catch_pick.py)."""
    return sorted(set(_marked(dataset_ids).values_list("pair__premise_id", flat=True)))


def catch_role_pairs(dataset_ids: Sequence[int] | None) -> QuerySet[Pair]:
    """Every pair that may be served as a catch trial: the pairs of these datasets' catch premises
    (a marked pair's siblings too; a premise is a catch premise of the dataset its mark is in),
    leaving out premises with a pair still in the validation queue."""
    pairs = Pair.objects.filter(premise_id__in=catch_premises(dataset_ids))
    if dataset_ids is not None:
        pairs = pairs.filter(dataset_id__in=dataset_ids)
    return pairs.exclude(_still_in_validation())


def premises_met(worker: Worker, seen: QuerySet[Any]) -> list[QuerySet[Any]]:
    """The premises the worker met (pk subqueries): wrote on, labelled, answered as a catch trial,
    or was served (`seen`: the pair pks of every claim of theirs)."""
    answered: tuple[QuerySet[Any], ...] = (ValidationLabel.objects.all(), CatchTrialAnswer.objects.all())
    return [
        Pair.objects.filter(author=worker).values("premise_id"),
        *(
            Pair.objects.filter(pk__in=rows.filter(worker=worker).values("pair_id")).values("premise_id")
            for rows in answered
        ),
        Pair.objects.filter(pk__in=seen).values("premise_id"),
    ]


def pick_catch_trials(
    *,
    worker: Worker,
    dataset: Dataset | None,
    most: int,
    per_batch: float,
    seen: QuerySet[Any],
    taken: Sequence[int] = (),
    claims: QuerySet[Any],
    premise_of: dict[int, int] | None = None,
    draw: Callable[[], float] = random.random,
    study_served: tuple[int, int] | None = None,
    keep_draw: Callable[[], float] = random.random,
) -> list[int]:
    """The pair pks to serve as catch trials in the worker's next validation batch, at most `most`,
    `per_batch` of them on average (docs/quality.md, "Catch premises ...").

    In runs, premise by premise: one pair of every open catch premise the worker may take (most
    served first; each batch keeps one with `KEEP_CHANCE`, `keep_draw`, as ordinary premises miss
    some), and new premises opened with the chance that keeps the mean at `per_batch`
    (`opening_chance`), or, given `study_served` (the study's batches and catch trials so far), at
    what the study owes (`opening_mean`). None of a premise the worker met (`seen`: the pair pks of
    every claim of theirs), none in `taken`, each served as a catch trial to fewer than
    `MAX_SERVINGS` participants (`claims`: every validation claim), no two of one premise;
    `premise_of`, when given, gets each picked pair's premise.

    The pairs are locked (skipping those another claimer holds) and their catch servings counted
    again in a fresh statement, so two claimers never both take a pair's last serving. The
    statements are the same whether the batch gets a catch trial or not (nothing in how a batch is
    claimed may tell a worker it holds one).
    """
    if most <= 0 or per_batch <= 0:
        return []
    role = catch_role_pairs(_ids(dataset))  # its catch premises read once, for the pick and the count
    candidates = role
    for met in premises_met(worker, seen):
        candidates = candidates.exclude(premise_id__in=met)
    candidates = candidates.exclude(pk__in=list(taken))
    candidates = (
        candidates.annotate(
            served=catch_servings(claims),
            premise_served=catch_servings(claims, of="premise_id", by="pair__premise_id"),
            premise_size=_pairs_of_premise(),
        )
        .filter(served__lt=MAX_SERVINGS)
        .order_by("-premise_served", "-served", "?")
    )
    # Open premises first, then new ones at random: four rows a place find the premises wanted.
    rows = list(lock_rows(candidates).values_list("pk", "premise_id", "premise_served", "premise_size")[: most * 4])
    if rows:
        fresh = dict(
            Pair.objects.filter(pk__in=[row[0] for row in rows])
            .annotate(served=catch_servings(claims))
            .values_list("pk", "served")
        )
        rows = [row for row in rows if fresh.get(row[0], MAX_SERVINGS) < MAX_SERVINGS]
    owed = None if study_served is None else _owed(role, study_served, per_batch=per_batch, claims=claims)
    picked: list[int] = []
    premises: dict[int, int] = {}
    skipped: set[int] = set()
    opening: int | None = None
    for pk, premise, premise_served, premise_size in rows:
        if len(picked) == most:
            break
        if premise in premises.values() or premise in skipped:
            continue
        if premise_served and keep_draw() >= KEEP_CHANCE:
            skipped.add(premise)  # this batch misses it, as ordinary premises miss some
            continue
        if not premise_served:
            if opening is None:
                mean = opening_chance(per_batch, premise_size) if owed is None else opening_mean(owed, premise_size)
                opening = whole_draws(mean, draw)
            if opening == 0:
                break  # every open premise came first: the rest are new
            opening -= 1
        picked.append(pk)
        premises[pk] = premise
    if premise_of is not None:
        premise_of.update(premises)
    return picked


def _pairs_of_premise() -> Subquery:
    """The number of pairs of a pair's premise (the outer row's `premise_id`)."""
    return _count_of(Pair.objects.filter(premise_id=OuterRef("premise_id")), "premise_id")


def opening_chance(per_batch: float, premise_pairs: int) -> float:
    """How many new catch premises a batch opens on average so that batches carry `per_batch` catch
    trials: an open premise gives one to each batch that follows until its `premise_pairs` pairs
    have had their `MAX_SERVINGS` servings, so each opening brings that many catch trials."""
    return per_batch / (MAX_SERVINGS * max(1, premise_pairs))


def _owed(role: QuerySet[Pair], study_served: tuple[int, int], *, per_batch: float, claims: QuerySet[Any]) -> float:
    """The catch trials a study owes before this batch is claimed: `per_batch` for each of its
    batches with this one, less the catch trials it was served and the servings its dataset's open
    catch premises (among `role`, its `catch_role_pairs`) have left (they come in the batches that
    follow, whatever opens now)."""
    batches, catch = study_served
    open_pairs = (
        role.annotate(
            served=catch_servings(claims),
            premise_served=catch_servings(claims, of="premise_id", by="pair__premise_id"),
        )
        .filter(premise_served__gt=0)
        .values_list("served", flat=True)
    )
    left: int = sum(max(0, MAX_SERVINGS - served) for served in open_pairs)
    return per_batch * (batches + 1) - catch - left


def opening_mean(owed: float, premise_pairs: int) -> float:
    """How many new catch premises a batch opens on average when the study owes `owed` catch trials:
    that many over the `MAX_SERVINGS` servings of each of a premise's `premise_pairs` pairs, none
    when it owes none. The study's count then follows its share whatever each premise's pace."""
    return max(0.0, owed) / (MAX_SERVINGS * max(1, premise_pairs))


def whole_draws(mean: float, draw: Callable[[], float]) -> int:
    """A whole number with this mean: its whole part, and one more with the chance of its fraction."""
    whole = int(mean)
    return whole + (1 if draw() < mean - whole else 0)


def catch_pool_status(dataset: Dataset, claims: QuerySet[Any]) -> dict[str, Any]:
    """The catch-trial pool of a dataset, for researchers: pairs marked, premises and pairs served in
    the catch role, marked pairs waiting for their premise's validation to finish, catch servings
    left under the rule, and whether it has run dry (batches then carry no catch trial)."""
    return catch_pool_statuses([dataset.pk], claims)[dataset.pk]


def catch_pool_statuses(dataset_ids: Iterable[int], claims: QuerySet[Any]) -> dict[int, dict[str, Any]]:
    """`catch_pool_status` of each of these datasets, in two grouped statements whatever their
    number (a page that asked once per active study would repeat the same statements)."""
    wanted = sorted(set(dataset_ids))
    statuses: dict[int, dict[str, Any]] = {
        pk: {"marked": 0, "waiting": 0, "premises": 0, "pairs": 0, "servings_left": 0, "max_servings": MAX_SERVINGS}
        for pk in wanted
    }
    if not wanted:
        return statuses
    role = catch_role_pairs(wanted).annotate(served=catch_servings(claims))
    premises: dict[int, set[int]] = {pk: set() for pk in wanted}
    for dataset_id, premise_id, served in role.values_list("dataset_id", "premise_id", "served"):
        status = statuses[dataset_id]
        status["pairs"] += 1
        status["servings_left"] += max(0, MAX_SERVINGS - served)
        premises[dataset_id].add(premise_id)
    marked = (
        _marked(wanted)
        .annotate(waiting=Exists(Pair.objects.filter(_still_in_validation(), pk=OuterRef("pair_id"))))
        .order_by()
        .values("pair__dataset_id")
        .annotate(marked=Count("pk"), waiting_n=Count("pk", filter=Q(waiting=True)))
        .values_list("pair__dataset_id", "marked", "waiting_n")
    )
    for dataset_id, count, waiting in marked:
        statuses[dataset_id].update(marked=count, waiting=waiting)
    for pk, status in statuses.items():
        status["premises"] = len(premises[pk])
        status["dry"] = status["servings_left"] == 0
        status["state"] = pool_state(status)
    return statuses


class PoolState:
    """Why a pool serves or not, as the quality pages name it."""

    UNMARKED = "unmarked"  # no pair of the dataset is marked as a catch trial
    WAITING = "waiting"  # marked pairs wait for their premise's other pairs' validation
    USED_UP = "used up"  # every catch pair has been served to its last participant
    SERVING = "serving"


def pool_state(status: Mapping[str, Any]) -> str:
    if status["marked"] == 0:
        return PoolState.UNMARKED
    if status["pairs"] == 0:
        return PoolState.WAITING
    return PoolState.USED_UP if status["dry"] else PoolState.SERVING


def score_catch_trials(
    *,
    worker: Worker,
    study_session: StudySession | None,
    batch: Any,
    catch_labels: Mapping[int, str],
    seconds: float | None = None,
) -> list[CatchTrialAnswer]:
    """Score a submitted batch's catch trials and record bonuses; `catch_labels` maps each
    catch-trial pair pk to the worker's label (never added to the pair's labels), `seconds` is the
    time per item.

    Runs in the submit's transaction. Returns the CatchTrialAnswer rows written.
    """
    if not catch_labels:
        return []
    marked = ReferenceLabel.objects.filter(pair_id__in=list(catch_labels), is_catch_trial=True)
    expected = dict(marked.values_list("pair_id", "label"))
    answers = [
        CatchTrialAnswer(
            worker=worker,
            pair_id=pair_pk,
            study_session=study_session,
            batch=batch,
            label=label,
            expected=expected[pair_pk],
            matched=label == expected[pair_pk],
            seconds=seconds,
        )
        # An unmarked sibling of a catch pair (served so that its premise looks like any other), or a
        # pair whose mark was removed since the batch was served, has nothing to be scored against.
        for pair_pk, label in sorted(catch_labels.items())
        if pair_pk in expected
    ]
    CatchTrialAnswer.objects.bulk_create(answers)
    record_catch_bonuses(worker, study_session, [answer for answer in answers if answer.matched])
    return answers


def catch_pools(studies: Iterable[Study], claims: QuerySet[Any]) -> list[dict[str, Any]]:
    """Per study that serves catch trials (a validation or MPE judgment study with a catch share):
    its dataset's pool (`catch_pool_status`), for the quality pages: each dataset's pool counted
    once, for every study together. A writing study's share serves nothing and is not listed."""
    serving = [study for study in studies if study.catch_trial_share > 0 and study.task_kind in CATCH_TASK_KINDS]
    statuses = catch_pool_statuses((study.dataset_id for study in serving if study.dataset_id is not None), claims)
    return [{"study": study, **statuses[study.dataset_id]} for study in serving if study.dataset_id is not None]


def catch_trials_per_batch(share: float, size: int) -> float:
    """The mean number of catch trials a batch of `size` places carries at this share: each place is
    one with probability `share`, at most `size - 1` (a batch keeps one ordinary pair)."""
    return sum(min(k, size - 1) * comb(size, k) * share**k * (1 - share) ** (size - k) for k in range(size + 1))


def catch_shortfall(study: Study, claims: QuerySet[Any], *, batch_size: int) -> str | None:
    """Why the study's catch share cannot be met, in words for its researcher, or None when it can
    (or it serves no catch trials): nothing marked, every marked pair waiting for its premise's
    validation, no serving left, or (with `Study.planned_sessions`) fewer servings left than its
    planned batches need (`catch_trials_per_batch`). Asked when the study is saved and on its page."""
    share = study.catch_trial_share
    if share <= 0 or study.task_kind not in CATCH_TASK_KINDS or study.dataset_id is None:
        return None
    pool = catch_pool_status(study.dataset, claims)
    head = f"This study serves {share:.0%} of its batches' places as catch trials, but "
    tail = " Its batches carry no catch trial then, and no catch bonus can be earned."
    if pool["marked"] == 0:
        return (
            f"{head}no pair of its dataset “{study.dataset}” is marked as a catch trial.{tail} Mark pairs "
            "on the Label pairs page (tick “catch trial”), or set the share to 0."
        )
    if pool["pairs"] == 0:
        return (
            f"{head}every one of the {pool['marked']} pairs marked as catch trials in “{study.dataset}” has a "
            f"premise with pairs still waiting for validation: they are served once those are done.{tail}"
        )
    if pool["dry"]:
        return (
            f"{head}its pool of {pool['pairs']} pairs is used up (each is served to {MAX_SERVINGS} participants).{tail}"
        )
    planned = study.planned_sessions
    if planned:
        needed = round(planned * study.tasks_per_batch * catch_trials_per_batch(share, batch_size))
        if needed > pool["servings_left"]:
            per_premise = MAX_SERVINGS * max(1, round(pool["pairs"] / max(1, pool["premises"])))
            more = -(-(needed - pool["servings_left"]) // per_premise)
            return (
                f"{head}its {planned} planned participants × {study.tasks_per_batch} batches need about {needed} "
                f"catch trials and its pool has {pool['servings_left']} servings left ({pool['pairs']} pairs of "
                f"{pool['premises']} catch premises, each pair served to at most {MAX_SERVINGS} participants). "
                f"Batches past that carry no catch trial. Mark a pair of about {more} more premises as catch "
                "trials, or lower the share."
            )
    return None
