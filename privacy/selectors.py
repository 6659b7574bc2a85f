"""Reads of a participant's data: who a team's participant is, and everything held about them
(the access download), read through the register (`privacy.register`)."""

from collections.abc import Callable
from typing import Any

from django.apps import apps
from django.db.models import Func, IntegerField, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce

from corpus.models import Dataset, Pair, ValidationLabel, Worker
from crowd.models import StudySession

from .models import ErasureRecord
from .register import REGISTER, Kind, PersonalField

# What the download adds to a row besides its registered fields, so the person can tell what it is.
CONTEXT: dict[str, tuple[str, ...]] = {
    "crowd.StudySession": (
        "study__slug",
        "started_at",
        "completed_at",
        "closed_at",
        "tasks_done",
        "completion_code",
        "code_held_reason",
    ),
    "corpus.ValidationLabel": ("pair__pair_id", "pair__dataset__slug", "position", "seconds", "excluded", "created_at"),
    "corpus.Pair": ("pair_id", "dataset__slug", "author_label", "gold_label", "created_at"),
    "corpus.GrammaticalityJudgment": ("pair__pair_id", "created_at"),
    "validation.PremiseLabel": ("created_at",),
    "adversarial.AdversarialTry": ("number", "predicted_label", "model_fooled", "created_at"),
    "authorship.WritingEvidence": ("pair__pair_id", "field_name", "flags", "flagged", "created_at"),
    "quality.BonusEntry": ("kind", "study__slug", "amount", "currency", "reason", "created_at"),
    "quality.WorkerEstimate": ("run_id", "method", "skill", "labels"),
    "collection.PremiseReport": ("premise__prompt_id", "resolved", "created_at"),
    "crowd.DeviceSighting": ("first_seen",),
    "consent.ConsentDecision": ("sheet__version", "study_session__study__slug"),
    "consent.Withdrawal": ("study_session__study__slug",),
}

# Sections other apps add to the download (the consent app: which sheet version was agreed and
# when). Registered by the composition root: each takes (worker, team id) and returns (name, rows).
EXTRA_SECTIONS: list[Callable[[Worker, int], tuple[str, Any]]] = []


def datasets_of_team(team_id: int) -> QuerySet[Dataset, int]:
    return Dataset.objects.filter(team_id=team_id).values_list("pk", flat=True)


def participant_in_team(worker: Worker, team_id: int) -> bool:
    """Whether `worker` is one of team `team_id`'s participants: a visit to one of its studies, or a
    label or written pair on one of its datasets. A team acts on its own participants only."""
    return (
        StudySession.objects.filter(worker=worker, study__team_id=team_id, is_preview=False).exists()
        or ValidationLabel.objects.filter(worker=worker, pair__dataset__team_id=team_id).exists()
        or Pair.objects.filter(author=worker, dataset__team_id=team_id).exists()
    )


def find_participant(market_id: str, team_ids: set[int] | None) -> tuple[Worker, int] | None:
    """(the worker, the team) of the participant with this market id (or user name) among the
    teams `team_ids` (None: every team); None when no such participant is any of theirs."""
    market_id = market_id.strip()
    if not market_id:
        return None
    candidates = Worker.objects.filter(Q(external_id=market_id) | Q(user__username=market_id)).order_by("pk")
    for worker in candidates:
        teams = set(StudySession.objects.filter(worker=worker).values_list("study__team_id", flat=True))
        teams |= set(ValidationLabel.objects.filter(worker=worker).values_list("pair__dataset__team_id", flat=True))
        teams |= set(Pair.objects.filter(author=worker).values_list("dataset__team_id", flat=True))
        for team in sorted(teams):
            if team_ids is None or team in team_ids:
                return worker, team
    return None


def _rows(entry: PersonalField, fields: list[str], worker: Worker, team_id: int) -> list[dict[str, Any]]:
    model = apps.get_model(entry.model)
    rows = model._default_manager.filter(**{entry.worker_path: worker.pk})
    if entry.team_paths:
        rows = rows.filter(entry.in_team(team_id)).distinct()
    return list(rows.order_by("pk").values(*fields))


def participant_data(worker: Worker, team_id: int) -> dict[str, Any]:
    """Everything team `team_id` holds about `worker`, by the register: one section per registered
    model with its personal fields and what tells the rows apart, plus the sections other apps add."""
    by_model: dict[str, list[PersonalField]] = {}
    for entry in REGISTER:
        # The audit log and the market's records name the person in text: they are redacted on
        # erasure, and a download of them would hand over other people's records.
        if entry.worker_path and entry.kind not in (Kind.AUDIT,) and not entry.derived:
            by_model.setdefault(entry.model, []).append(entry)
    data: dict[str, Any] = {
        "participant": {"market": worker.market, "market_id": worker.external_id, "joined": worker.created_at},
        "exclusions": list(worker.exclusions.filter(team_id=team_id).values("team__name")),
    }
    for model, model_entries in sorted(by_model.items()):
        fields = ["pk"]
        for entry in model_entries:
            if entry.field == "*":
                fields += [f.name for f in apps.get_model(model)._meta.concrete_fields if not f.is_relation]
            else:
                fields.append(entry.field)
        fields += [name for name in CONTEXT.get(model, ()) if name not in fields]
        data[model] = _rows(model_entries[0], list(dict.fromkeys(fields)), worker, team_id)
    for section in EXTRA_SECTIONS:
        name, rows = section(worker, team_id)
        data[name] = rows
    return data


def erasures_since(team_ids: set[int] | None, since: Any) -> QuerySet[ErasureRecord]:
    """The teams' erasures after `since` (a snapshot's release: the people its files still hold; None: all)."""
    rows = ErasureRecord.objects.all() if since is None else ErasureRecord.objects.filter(created_at__gt=since)
    if team_ids is not None:
        rows = rows.filter(team_id__in=team_ids)
    return rows


def erasures_after_snapshot() -> Coalesce:
    """An annotation of Snapshot rows: how many erasures the snapshot's team recorded after it was made
    (the people its files still hold); one subquery, so a page of snapshots is one statement."""
    later = (
        ErasureRecord.objects.filter(team_id=OuterRef("team_id"), created_at__gt=OuterRef("created_at"))
        .order_by()
        .annotate(n=Func("pk", function="COUNT"))
        .values("n")
    )
    return Coalesce(Subquery(later, output_field=IntegerField()), 0)


def erasures_since_each_snapshot(team_ids: set[int] | None, shown: int) -> list[tuple[Any, int]]:
    """The latest `shown` snapshots of these teams (None: every team's), each with how many erasures
    its team recorded since it was made (the next snapshot leaves those people out)."""
    from modeling.models import Snapshot

    snapshots = Snapshot.objects.all() if team_ids is None else Snapshot.objects.filter(team_id__in=team_ids)
    annotated = snapshots.annotate(erasures_since=erasures_after_snapshot()).order_by("-created_at")[:shown]
    return [(snapshot, snapshot.erasures_since) for snapshot in annotated]
