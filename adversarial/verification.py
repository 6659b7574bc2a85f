"""Verification of fooled examples as ANLI did it (§2.1, step 3).

A fooled example's pair is queued, blind, for the platform's validation task. The first two
verifiers' labels decide when they agree, else the third decides with the one it agrees with (no
majority of three: discarded); verified when the majority is the writer's label, else discarded.

A writer must not verify their own bonus: labels by the writer's own ids (`crowd.DeviceSighting`,
`crowd.WorkerLink`) and by excluded workers do not count. Verifiers are also kept apart from each
other and from the writer (`Ties`: a device or market link, one small network group, one
correlated-error group); a tied verifier is not counted, a `VerifierTie` records whom and how, and
the example waits for verifiers tied to nobody. Once decided the pair leaves the validation queue;
later labels never change the verdict. The gold rule is untouched: author + two agreeing verifiers
is three of five votes, so a verified pair's gold label is the writer's.
"""

from collections import Counter
from dataclasses import dataclass

from django.db import transaction
from django.db.models import Max

from authorship.networks import ids_sharing_a_network
from base.long_tasks import JobStatus
from corpus.models import AUTHOR_POSITION, Pair, ValidationLabel
from corpus.selectors import labels_that_count
from corpus.services import set_needs_validation
from crowd.selectors import linked_ids
from quality.models import AggregationRun, CorrelatedWorkerGroup

from .models import AdversarialTry, TieKind, Verification, VerifierTie

VERIFIERS_FIRST = 2
VERIFIERS_AT_MOST = 3


def verdict(writer_label, verifier_labels):
    """VERIFIED, DISCARDED or PENDING for the verifiers' labels in the order they came."""
    first = list(verifier_labels[:VERIFIERS_AT_MOST])
    if len(first) < VERIFIERS_FIRST:
        return Verification.PENDING
    if first[0] == first[1]:
        majority = first[0]
    elif len(first) < VERIFIERS_AT_MOST:
        return Verification.PENDING
    else:
        label, votes = Counter(first).most_common(1)[0]
        majority = label if votes >= 2 else None
    return Verification.VERIFIED if majority == writer_label else Verification.DISCARDED


@dataclass(frozen=True)
class Ties:
    """What ties people together, read once for the people of a settle: ids of one person (a shared
    device, a market link), ids of one small network group, members of one correlated-error group
    of the dataset's latest aggregation run."""

    linked: dict[int, set[int]]
    network: dict[int, set[int]]
    correlated: dict[int, set[int]]

    @classmethod
    def of(cls, people: set[int], dataset_ids: set[int]) -> "Ties":
        return cls(linked_ids(worker_ids=people), ids_sharing_a_network(people), correlated_peers(people, dataset_ids))

    def kind(self, one: int, other: int) -> str | None:
        if other in self.linked.get(one, ()) or one in self.linked.get(other, ()):
            return TieKind.DEVICE
        if other in self.network.get(one, ()):
            return TieKind.NETWORK
        if other in self.correlated.get(one, ()):
            return TieKind.CORRELATED
        return None

    def tie(self, verifier: int, writer: int, counted: list[int]) -> tuple[int, str] | None:
        """(whom, how) the verifier is tied to: the writer first, then the verifiers counted before."""
        if self.kind(verifier, writer) is not None:
            return writer, TieKind.WRITER
        for earlier in counted:
            kind = self.kind(verifier, earlier)
            if kind is not None:
                return earlier, kind
        return None


def correlated_peers(people: set[int], dataset_ids: set[int]) -> dict[int, set[int]]:
    """{worker id: the other members of a correlated-error group it is in}, of the groups of each
    dataset's latest finished aggregation run (quality.correlated)."""
    latest = (
        AggregationRun.objects.filter(status=JobStatus.DONE, dataset_id__in=dataset_ids)
        .order_by()
        .values("dataset_id")
        .annotate(last=Max("pk"))
        .values_list("last", flat=True)
    )
    groups = CorrelatedWorkerGroup.objects.filter(run_id__in=list(latest), members__in=people).distinct()
    members: dict[int, set[int]] = {}
    for group_id, worker_id in CorrelatedWorkerGroup.members.through.objects.filter(
        correlatedworkergroup_id__in=groups.values("pk")
    ).values_list("correlatedworkergroup_id", "worker_id"):
        members.setdefault(group_id, set()).add(worker_id)
    peers: dict[int, set[int]] = {}
    for group in members.values():
        for worker_id in group & people:
            peers.setdefault(worker_id, set()).update(group - {worker_id})
    return peers


def settle(pair_ids):
    """Decide every pending fooled try among these pairs that has its verifiers; returns the tries
    decided. In the caller's transaction (the validation submit's), so the verdict, the queue and the
    bonus commit with the labels."""
    # Most labels are of pairs no model was tried on: a plain look first (the locking read below,
    # four joins deep, cost a third of a validation submit's Python in building its SQL).
    if not AdversarialTry.objects.filter(pair_id__in=list(pair_ids), verification=Verification.PENDING).exists():
        return []
    pending = list(
        AdversarialTry.objects.select_for_update(of=("self",))
        .filter(pair_id__in=pair_ids, verification=Verification.PENDING)
        .select_related("task__writing_claim__study_session__study", "pair")
        .order_by("pk")
    )
    if not pending:
        return []
    writers = {attempt.pair_id: attempt.task.worker_id for attempt in pending}
    rows = list(
        ValidationLabel.objects.filter(
            labels_that_count(), pair_id__in=[t.pair_id for t in pending], position__gt=AUTHOR_POSITION
        )
        .order_by("pair_id", "position")
        .values_list("pair_id", "label", "worker_id")
    )
    people = set(writers.values()) | {verifier for _, _, verifier in rows if verifier is not None}
    ties = Ties.of(people, {attempt.pair.dataset_id for attempt in pending if attempt.pair is not None})
    attempts = {attempt.pair_id: attempt for attempt in pending}
    labels: dict[int | None, list[str]] = {}
    counted: dict[int | None, list[int]] = {}
    found: list[VerifierTie] = []
    for pair_id, label, verifier in rows:
        writer = writers[pair_id]
        if verifier == writer:
            continue  # never the writer's own label
        if verifier is not None:
            tie = ties.tie(verifier, writer, counted.get(pair_id, []))
            if tie is not None:  # the example waits for verifiers tied to nobody
                found.append(
                    VerifierTie(attempt=attempts[pair_id], verifier_id=verifier, tied_to_id=tie[0], kind=tie[1])
                )
                continue
            counted.setdefault(pair_id, []).append(verifier)
        labels.setdefault(pair_id, []).append(label)
    VerifierTie.objects.bulk_create(found, ignore_conflicts=True)
    decided = []
    for attempt in pending:
        result = verdict(attempt.task.target_label, labels.get(attempt.pair_id, []))
        if result == Verification.PENDING:
            continue
        attempt.verification = result
        attempt.save(update_fields=["verification"])
        decided.append(attempt)
        if result == Verification.VERIFIED:
            _record_bonus(attempt)
    if decided:
        set_needs_validation(Pair.objects.filter(pk__in=[t.pair_id for t in decided]), False)
    return decided


def _record_bonus(attempt):
    from quality.bonuses import FOOLED_MODEL_REASON, record_bonus
    from quality.models import BonusCause

    study_session = attempt.task.writing_claim.study_session
    if study_session is None:
        return None
    settings = getattr(study_session.study, "adversarial_settings", None)
    amount = settings.bonus_per_verified_fooled if settings is not None else None
    return record_bonus(
        attempt.task.worker,
        study_session,
        attempt.pair,
        amount,
        f"{FOOLED_MODEL_REASON} (study {study_session.study.slug}, round {attempt.round.number})",
        cause=BonusCause.FOOLED_MODEL,
    )


def settle_after_labels(sender, pair_ids, **kwargs):
    # Inside the submit's own transaction: no savepoint of its own (two more statements a submit).
    with transaction.atomic(savepoint=False):
        settle(pair_ids)
