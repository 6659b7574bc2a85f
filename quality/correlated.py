"""Correlated errors: workers who agree on wrong answers far beyond what their accuracy predicts,
and the pairs whose gold label rests on such a group's votes (docs/quality.md "Correlated errors":
the pair test, the clique and shared-errors stages, and when gold is at risk).

Pure pandas/numpy/scipy over crowd-kit's label layout (`task`, `worker`, `label`): the platform
(`quality.correlated_runs`) and the replay (`bench/gold_flip_replay.py`) call the same functions.
The 3-of-5 rule counts five votes as five independent opinions; bots sharing a rule, colluders or
one person under several ids give the *same* wrong label together and switch the gold silently.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
from scipy import sparse, special, stats

from corpus.labels import GOLD_MAJORITY, NO_GOLD

from .aggregation import dawid_skene, validate_labels

MIN_SHARED = 10  # scored tasks a pair of workers needs before it is tested, at most (scaled_min_shared)
MIN_SHARED_FLOOR = 3  # ... and at least: fewer shared tasks cannot reach the corrected level anyway
ALPHA = 0.01  # family-wise, Bonferroni over the tested pairs of workers
MIN_CO_ERRORS = 3  # same wrong label at least this often: agreeing on right answers is no evidence
MAX_RATIO = 0.25  # disagreements at most this share of the calibrated expectation (an effect, not only a p-value)
MIN_CALIBRATION = 0.1
# The clique stage tries these per-pair levels (each one's bound gets alpha / their number).
CLIQUE_LEVELS = (0.01, 0.001)
PAIR_TEST, CLIQUE_TEST, SHARED_ERRORS = "pair test", "clique", "shared errors"
SEED_LEVEL = 0.05  # a seed of the shared-errors stage: agreement below the pooled one at this level
SET_RATIO = 1.25  # the seeds' pairs share errors at least this many times as often as the others
CALIBRATION_ROUNDS = 5
GROUP_WORKER_PREFIX = "group-"

REASON_AS_ONE_VOTE = "as one vote"
REASON_OTHERS = "the other labels"
REASON_DAWID_SKENE = "Dawid–Skene"


@dataclass(frozen=True)
class PairEvidence:
    """What a pair of workers did on the tasks both labelled (scored: a reference without them exists)."""

    worker_a: str
    worker_b: str
    shared: int
    disagreements: int  # tasks where their labels differ
    expected_disagreements: float  # what independent workers of their accuracy would give, calibrated
    co_errors: int  # same label, not the reference
    p_value: float  # one-sided (fewer disagreements), before the correction
    linked_by: str = "pair test"  # PAIR_TEST, CLIQUE_TEST (a clique too large for chance) or SHARED_ERRORS

    def as_dict(self) -> dict[str, object]:
        return {
            "worker_a": self.worker_a,
            "worker_b": self.worker_b,
            "shared": self.shared,
            "disagreements": self.disagreements,
            "expected_disagreements": round(self.expected_disagreements, 2),
            "co_errors": self.co_errors,
            "p_value": float(f"{self.p_value:.3g}"),
            "linked_by": self.linked_by,
        }


@dataclass(frozen=True)
class CorrelatedGroup:
    number: int  # 1 for the largest group
    members: tuple[str, ...]
    edges: tuple[PairEvidence, ...]

    @property
    def shared(self) -> int:
        return sum(edge.shared for edge in self.edges)

    @property
    def disagreements(self) -> int:
        return sum(edge.disagreements for edge in self.edges)

    @property
    def expected_disagreements(self) -> float:
        return sum(edge.expected_disagreements for edge in self.edges)

    @property
    def co_errors(self) -> int:
        return sum(edge.co_errors for edge in self.edges)


@dataclass(frozen=True)
class CorrelatedCheck:
    groups: tuple[CorrelatedGroup, ...]
    tested_pairs: int  # pairs of workers with at least min_shared scored tasks
    calibration: float  # honest pairs' observed / expected co-errors
    alpha: float
    flagged_pairs: tuple[PairEvidence, ...] = field(default=())

    def group_of(self) -> dict[str, int]:
        """worker -> the number of their group."""
        return {member: group.number for group in self.groups for member in group.members}

    def figures(self) -> dict[str, object]:
        return {
            "groups": len(self.groups),
            "workers_in_groups": sum(len(group.members) for group in self.groups),
            "tested_pairs": self.tested_pairs,
            "flagged_pairs": len(self.flagged_pairs),
            "calibration": round(self.calibration, 3),
            "alpha": self.alpha,
        }


def _codes(data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray, pd.Index, pd.Index, pd.Index]:
    tasks, task_names = pd.factorize(data["task"])
    workers, worker_names = pd.factorize(data["worker"])
    labels, label_names = pd.factorize(data["label"], sort=True)
    return tasks, workers, labels, pd.Index(task_names), pd.Index(worker_names), pd.Index(label_names)


def _votes(tasks: np.ndarray, labels: np.ndarray, n_tasks: int, n_labels: int) -> np.ndarray:
    votes = np.zeros((n_tasks, n_labels), dtype=np.int64)
    np.add.at(votes, (tasks, labels), 1)
    return votes


def _strict_majority(others: np.ndarray) -> np.ndarray:
    """Row-wise: the label holding more than half of `others` (at least two of them), else -1."""
    total = others.sum(axis=1)
    best = others.argmax(axis=1)
    top = others[np.arange(len(others)), best]
    return np.where((total >= 2) & (2 * top > total), best, -1)


def _confusions(
    workers: np.ndarray, labels: np.ndarray, references: np.ndarray, n_workers: int, n_labels: int
) -> np.ndarray:
    """pi[w, r, k] = P(w gives k | reference r), against leave-one-out references, add-one smoothed."""
    counts = np.ones((n_workers, n_labels, n_labels))
    scored = references >= 0
    np.add.at(counts, (workers[scored], references[scored], labels[scored]), 1)
    smoothed: np.ndarray = counts / counts.sum(axis=2, keepdims=True)
    return smoothed


def pair_statistics(data: pd.DataFrame) -> pd.DataFrame:
    """Per pair of workers (a < b in first-seen order): shared scored tasks, co-errors and the
    co-errors independent errors predict (uncalibrated). Set-based: one self-join on the task."""
    data = validate_labels(data)
    tasks, workers, labels, _, worker_names, label_names = _codes(data)
    n_tasks, n_workers, n_labels = int(tasks.max(initial=-1)) + 1, len(worker_names), len(label_names)
    votes = _votes(tasks, labels, n_tasks, n_labels)
    own = np.eye(n_labels, dtype=np.int64)
    leave_one_out = _strict_majority(votes[tasks] - own[labels])
    pi = _confusions(workers, labels, leave_one_out, n_workers, n_labels)

    rows = pd.DataFrame({"task": tasks, "worker": workers, "label": labels})
    joined = rows.merge(rows, on="task", suffixes=("_a", "_b"))
    joined = joined[joined["worker_a"] < joined["worker_b"]]
    task = joined["task"].to_numpy()
    a, b = joined["worker_a"].to_numpy(), joined["worker_b"].to_numpy()
    label_a, label_b = joined["label_a"].to_numpy(), joined["label_b"].to_numpy()
    reference = _strict_majority(votes[task] - own[label_a] - own[label_b])
    scored = reference >= 0
    a, b, label_a, label_b, reference = a[scored], b[scored], label_a[scored], label_b[scored], reference[scored]
    co_error = (label_a == label_b) & (label_a != reference)
    either_errs = (label_a != reference) | (label_b != reference)
    both = pi[a, reference, :] * pi[b, reference, :]
    agree_chance = both.sum(axis=1)
    both[np.arange(len(reference)), reference] = 0.0
    frame = pd.DataFrame(
        {
            "a": a,
            "b": b,
            "shared": 1,
            "disagreements": (label_a != label_b).astype(np.int64),
            "expected_disagreements": 1.0 - agree_chance,
            "co_errors": co_error.astype(np.int64),
            "expected_co_errors": both.sum(axis=1),
            "error_events": either_errs.astype(np.int64),
        }
    )
    per_pair = frame.groupby(["a", "b"], sort=True).sum().reset_index()
    per_pair["worker_a"] = worker_names[per_pair["a"].to_numpy()].astype(str)
    per_pair["worker_b"] = worker_names[per_pair["b"].to_numpy()].astype(str)
    return per_pair[["worker_a", "worker_b", *frame.columns.drop(["a", "b"])]]


def scaled_min_shared(data: pd.DataFrame) -> int:
    """The shared scored tasks a pair of workers needs before the pair test, scaled to the study's
    overlap: half of what two workers of the median number of labels would share if each task's
    labels came from workers drawn at random (n * n * (k - 1) / (k * T) for n labels each, k labels
    a task, T tasks), between MIN_SHARED_FLOOR and MIN_SHARED."""
    data = validate_labels(data)
    if data.empty:
        return MIN_SHARED
    per_worker = data.groupby("worker").size()
    per_task = data.groupby("task").size()
    n, k, tasks = float(per_worker.median()), float(per_task.mean()), len(per_task)
    expected = n * n * max(0.0, k - 1) / (k * tasks)
    return int(min(MIN_SHARED, max(MIN_SHARED_FLOOR, round(expected / 2))))


def worker_agreement(data: pd.DataFrame) -> pd.DataFrame:
    """Per worker: `scored` labels (a strict majority of the task's other labels exists) and how many
    `agree` with it (the leave-one-out reference)."""
    data = validate_labels(data)
    tasks, workers, labels, _, worker_names, label_names = _codes(data)
    n_tasks, n_labels = int(tasks.max(initial=-1)) + 1, len(label_names)
    votes = _votes(tasks, labels, n_tasks, n_labels)
    reference = _strict_majority(votes[tasks] - np.eye(n_labels, dtype=np.int64)[labels])
    scored = reference >= 0
    count = len(worker_names)
    return pd.DataFrame(
        {
            "scored": np.bincount(workers[scored], minlength=count),
            "agree": np.bincount(workers[scored], weights=labels[scored] == reference[scored], minlength=count),
        },
        index=pd.Index(worker_names.astype(str)),
    )


def shared_error_links(data: pd.DataFrame, per_pair: pd.DataFrame, alpha: float = ALPHA) -> np.ndarray:
    """The pairs (rows of `pair_statistics`) the shared-errors stage links (docs/quality.md)."""
    linked = np.zeros(len(per_pair), dtype=bool)
    agreement = worker_agreement(data)
    if agreement.empty or agreement["scored"].sum() == 0:
        return linked
    pooled = float(agreement["agree"].sum() / agreement["scored"].sum())
    seed_p = stats.binom.cdf(agreement["agree"], agreement["scored"], pooled)
    seeds = set(agreement.index[(agreement["scored"] > 0) & (seed_p <= SEED_LEVEL)])
    if len(seeds) < 2:
        return linked
    in_a = per_pair["worker_a"].isin(seeds).to_numpy()
    in_b = per_pair["worker_b"].isin(seeds).to_numpy()
    inside, outside = in_a & in_b, ~(in_a | in_b)
    events, co_errors = per_pair["error_events"].to_numpy(), per_pair["co_errors"].to_numpy()
    outside_events = int(events[outside].sum())
    if outside_events == 0:
        return linked
    q0 = min(0.999, max(1e-6, float(co_errors[outside].sum() / outside_events)))
    set_events, set_co_errors = int(events[inside].sum()), int(co_errors[inside].sum())
    if set_events == 0 or set_co_errors < SET_RATIO * q0 * set_events:
        return linked
    if stats.binom.sf(set_co_errors - 1, set_events, q0) > alpha:
        return linked
    # Each seed: its errors with the other seeds, shared beyond q0.
    rows = per_pair[inside]
    own = pd.concat(
        [
            rows[["worker_a", "error_events", "co_errors"]].rename(columns={"worker_a": "worker"}),
            rows[["worker_b", "error_events", "co_errors"]].rename(columns={"worker_b": "worker"}),
        ]
    )
    per_seed = own.groupby("worker")[["error_events", "co_errors"]].sum()
    seed_p_shared = stats.binom.sf(per_seed["co_errors"] - 1, per_seed["error_events"], q0)
    kept = set(per_seed.index[(per_seed["co_errors"] >= MIN_CO_ERRORS) & (seed_p_shared <= SEED_LEVEL)])
    both_kept = per_pair["worker_a"].isin(kept).to_numpy() & per_pair["worker_b"].isin(kept).to_numpy()
    flagged: np.ndarray = both_kept & (co_errors > 0)
    return flagged


def find_correlated_groups(
    data: pd.DataFrame,
    *,
    min_shared: int | None = None,
    alpha: float = ALPHA,
    min_co_errors: int = MIN_CO_ERRORS,
    max_ratio: float = MAX_RATIO,
) -> CorrelatedCheck:
    """The groups of workers whose labels agree beyond chance (docs/quality.md, "The check");
    `min_shared` None: `scaled_min_shared` of the table."""
    if min_shared is None:
        min_shared = scaled_min_shared(data)
    per_pair = pair_statistics(data)
    observed = per_pair["disagreements"].to_numpy()
    expected = per_pair["expected_disagreements"].to_numpy()
    tested = (per_pair["shared"].to_numpy() >= min_shared) & (per_pair["co_errors"].to_numpy() >= min_co_errors)
    n_tested = int((per_pair["shared"].to_numpy() >= min_shared).sum())
    calibration = 1.0
    flagged = np.zeros(len(per_pair), dtype=bool)
    p_values = np.ones(len(per_pair))
    for _ in range(CALIBRATION_ROUNDS):
        mean = calibration * expected
        p_values = stats.poisson.cdf(observed, np.maximum(mean, 1e-12))
        flagged = tested & (p_values <= alpha / max(1, n_tested)) & (observed <= max_ratio * mean)
        suspects = set(per_pair.loc[flagged, "worker_a"]) | set(per_pair.loc[flagged, "worker_b"])
        clean = ~(per_pair["worker_a"].isin(suspects) | per_pair["worker_b"].isin(suspects)).to_numpy()
        total_expected = expected[clean].sum()
        updated = max(MIN_CALIBRATION, float(observed[clean].sum() / total_expected)) if total_expected > 0 else 1.0
        if abs(updated - calibration) < 1e-3:
            calibration = updated
            break
        calibration = updated
    mean = calibration * expected
    p_values = stats.poisson.cdf(observed, np.maximum(mean, 1e-12))
    strict = tested & (p_values <= alpha / max(1, n_tested)) & (observed <= max_ratio * mean)
    loose = tested & (observed <= max_ratio * mean)
    workers_tested = len(set(per_pair.loc[tested, "worker_a"]) | set(per_pair.loc[tested, "worker_b"]))
    in_clique = _significant_cliques(per_pair, p_values, loose, workers_tested, alpha)
    shared_errors = shared_error_links(data, per_pair, alpha)
    linked = strict | in_clique | shared_errors
    edges = [
        PairEvidence(
            worker_a=str(row.worker_a),
            worker_b=str(row.worker_b),
            shared=int(row.shared),
            disagreements=int(row.disagreements),
            expected_disagreements=float(row.expected_disagreements) * calibration,
            co_errors=int(row.co_errors),
            p_value=float(p_values[index]),
            linked_by=PAIR_TEST if strict[index] else CLIQUE_TEST if in_clique[index] else SHARED_ERRORS,
        )
        for index, row in zip(np.flatnonzero(linked), per_pair[linked].itertuples(index=False), strict=True)
    ]
    return CorrelatedCheck(
        groups=_components(edges),
        tested_pairs=n_tested,
        calibration=calibration,
        alpha=alpha,
        flagged_pairs=tuple(edges),
    )


def _significant_cliques(
    per_pair: pd.DataFrame, p_values: np.ndarray, candidates: np.ndarray, workers: int, alpha: float
) -> np.ndarray:
    """Pairs of workers inside a clique too large for chance: k workers every pair of whom has
    p <= level. With valid p-values and independent workers, such cliques number at most
    C(workers, k) * level ** C(k, 2) on average; a clique is kept when that is at most alpha
    (divided by the number of levels tried). Pools the evidence of ids that each share too few
    pairs for the pair test alone (many bot ids, each labelling little)."""
    kept = np.zeros(len(per_pair), dtype=bool)
    index_of = {
        (a, b): position for position, (a, b) in enumerate(zip(per_pair["worker_a"], per_pair["worker_b"], strict=True))
    }
    for level in CLIQUE_LEVELS:
        chosen = np.flatnonzero(candidates & (p_values <= level))
        neighbours: dict[str, set[str]] = {}
        for row in chosen:
            a, b = per_pair["worker_a"].iat[row], per_pair["worker_b"].iat[row]
            neighbours.setdefault(a, set()).add(b)
            neighbours.setdefault(b, set()).add(a)
        for clique in _maximal_cliques(neighbours):
            k = len(clique)
            if k < 3:
                continue
            log_cliques_of_k = special.gammaln(workers + 1) - special.gammaln(k + 1) - special.gammaln(workers - k + 1)
            log_bound = log_cliques_of_k + (k * (k - 1) / 2) * np.log(level)
            if log_bound > np.log(alpha / len(CLIQUE_LEVELS)):
                continue
            for a in clique:
                for b in clique:
                    linked = index_of.get((a, b))
                    if linked is not None:
                        kept[linked] = True
    return kept


def _maximal_cliques(neighbours: dict[str, set[str]]) -> list[list[str]]:
    """Bron–Kerbosch with a pivot, over a small sparse graph (the candidate links only)."""
    found: list[list[str]] = []

    def expand(clique: list[str], possible: set[str], excluded: set[str]) -> None:
        if not possible and not excluded:
            found.append(sorted(clique))
            return
        pivot = max(possible | excluded, key=lambda node: len(neighbours[node] & possible))
        for node in sorted(possible - neighbours[pivot]):
            expand([*clique, node], possible & neighbours[node], excluded & neighbours[node])
            possible = possible - {node}
            excluded = excluded | {node}

    expand([], set(neighbours), set())
    return found


def _components(edges: Sequence[PairEvidence]) -> tuple[CorrelatedGroup, ...]:
    if not edges:
        return ()
    names = pd.Index(sorted({edge.worker_a for edge in edges} | {edge.worker_b for edge in edges}))
    rows = names.get_indexer([edge.worker_a for edge in edges])
    columns = names.get_indexer([edge.worker_b for edge in edges])
    graph = sparse.coo_matrix((np.ones(len(edges)), (rows, columns)), shape=(len(names), len(names)))
    _, component = sparse.csgraph.connected_components(graph, directed=False)
    members: dict[int, list[str]] = {}
    for name, number in zip(names, component, strict=True):
        members.setdefault(int(number), []).append(str(name))
    ordered = sorted(members.values(), key=lambda group: (-len(group), group))
    return tuple(
        CorrelatedGroup(number, tuple(group), tuple(edge for edge in edges if edge.worker_a in group))
        for number, group in enumerate(ordered, start=1)
    )


# --- gold that rests on a group's votes ----------------------------------------------------------


def _gold(votes: np.ndarray, label_names: pd.Index) -> np.ndarray:
    """The 3-of-5 rule (corpus.gold) over a task x label vote table."""
    has = votes >= GOLD_MAJORITY
    names = np.asarray(label_names, dtype=object)
    return np.where(has.any(axis=1), names[votes.argmax(axis=1)], NO_GOLD)


def groups_as_one_worker(data: pd.DataFrame, check: CorrelatedCheck) -> pd.DataFrame:
    """The label table with each group's votes on a task replaced by one vote of a worker named
    `group-<number>`: the members' plurality label, or no vote where they are tied."""
    data = validate_labels(data)
    group_of = check.group_of()
    number = data["worker"].astype(str).map(group_of)
    in_group = number.notna()
    if not in_group.any():
        return data
    grouped = data[in_group].assign(group=number[in_group].astype(int))
    counts = grouped.groupby(["task", "group", "label"]).size().rename("votes").reset_index()
    top = counts.groupby(["task", "group"])["votes"].transform("max")
    winners = counts[counts["votes"] == top]
    clear = winners.groupby(["task", "group"])["label"].transform("size") == 1
    one_vote = winners[clear].assign(worker=lambda frame: GROUP_WORKER_PREFIX + frame["group"].astype(str))
    return pd.concat([data[~in_group], one_vote[["task", "worker", "label"]]], ignore_index=True)


def _strict_plurality(votes: np.ndarray, label_names: pd.Index) -> np.ndarray:
    """Row-wise: the label with more votes than any other, else NO_GOLD (a tie, or no votes)."""
    ordered = np.sort(votes, axis=1)
    clear = ordered[:, -1] > (ordered[:, -2] if votes.shape[1] > 1 else 0)
    names = np.asarray(label_names, dtype=object)
    return np.where(clear, names[votes.argmax(axis=1)], NO_GOLD)


def gold_at_risk(data: pd.DataFrame, check: CorrelatedCheck, *, use_dawid_skene: bool = True) -> pd.DataFrame:
    """Tasks whose 3-of-5 gold rests on a group's votes, one row each: `gold` (3-of-5 over all the
    task's labels), `group` (the group with the most votes on it), `others` (the strict plurality
    of the labels from outside every group, "-" for a tie), `as_one_vote` (the gold with each group
    as one vote), `dawid_skene` (the label with each group as one worker; '' when not fitted) and
    `reason`. A task with a group's votes is at risk when its gold is a label the other labels do
    not put first, when the gold changes with the group as one vote, or when Dawid–Skene (each
    group one worker) gives another label than the gold."""
    columns = ["task", "gold", "group", "others", "as_one_vote", "dawid_skene", "reason"]
    data = validate_labels(data)
    group_of = check.group_of()
    if not group_of:
        return pd.DataFrame(columns=columns)
    tasks, _, labels, task_names, _, label_names = _codes(data)
    n_tasks, n_labels = len(task_names), len(label_names)
    gold = _gold(_votes(tasks, labels, n_tasks, n_labels), label_names)
    number = data["worker"].astype(str).map(group_of)
    in_group = number.notna().to_numpy()
    others = _strict_plurality(_votes(tasks[~in_group], labels[~in_group], n_tasks, n_labels), label_names)

    merged = groups_as_one_worker(data, check)
    merged_tasks = task_names.get_indexer(merged["task"])
    merged_labels = label_names.get_indexer(merged["label"])
    as_one_vote = _gold(_votes(merged_tasks, merged_labels, n_tasks, n_labels), label_names)

    # The group with the most votes on the task (then the lower number) is the one it rests on.
    voted = pd.DataFrame({"task": tasks[in_group], "group": number[in_group].astype(int).to_numpy()})
    per_task = voted.groupby(["task", "group"]).size().rename("votes").reset_index()
    per_task = per_task.sort_values(["task", "votes", "group"], ascending=[True, False, True])
    rests_on = per_task.drop_duplicates("task")
    at = rests_on["task"].to_numpy()
    frame = pd.DataFrame(
        {
            "task": task_names[at],
            "gold": gold[at],
            "group": rests_on["group"].to_numpy(),
            "others": others[at],
            "as_one_vote": as_one_vote[at],
            "dawid_skene": "",
        }
    )
    has_gold = frame["gold"] != NO_GOLD
    outvoted = has_gold & (frame["others"] != frame["gold"])
    changed = frame["as_one_vote"] != frame["gold"]
    overruled = pd.Series(False, index=frame.index)
    if use_dawid_skene:
        fitted = dawid_skene(merged).labels
        frame["dawid_skene"] = frame["task"].map(fitted).fillna("").astype(str)
        overruled = has_gold & (frame["dawid_skene"] != "") & (frame["dawid_skene"] != frame["gold"])
    group = "group " + frame["group"].astype(str)
    frame["reason"] = ""
    frame.loc[overruled, "reason"] = (
        f"{REASON_DAWID_SKENE} with "
        + group
        + " as one worker says "
        + frame["dawid_skene"]
        + ", gold "
        + frame["gold"]
    )[overruled]
    others_say = np.where(frame["others"] == NO_GOLD, "are tied", "put " + frame["others"] + " first")
    frame.loc[outvoted, "reason"] = (
        "gold " + frame["gold"] + " rests on " + group + f": {REASON_OTHERS} " + others_say
    )[outvoted]
    frame.loc[changed, "reason"] = (
        "gold " + frame["gold"] + " rests on " + group + f": {REASON_AS_ONE_VOTE} it is " + frame["as_one_vote"]
    )[changed]
    return frame.loc[outvoted | changed | overruled, columns].reset_index(drop=True)
