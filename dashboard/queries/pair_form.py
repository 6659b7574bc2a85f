"""What the pair browser's form offers beside its pairs (genres, writing studies, the datasets
whose studies check writing with a model, the bulk history of the user's research teams), read in
one statement and kept in the cache until a writer of those rows saves or deletes one (`forget`),
so the history shows an action the moment it is done. A writer that bypasses `save` is caught up
within FORM_SECONDS: only names could lag, and the filters themselves read the rows they name.
"""

import json
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.core.cache import cache
from django.db import connection, transaction
from django.db.models import QuerySet

from base.release import source_release
from base.subquery import sql_of
from corpus.models import Genre
from crowd.models import Study, TaskKind
from model_annotators.models import ModelUse
from teams import access

from ..models import BulkActionKind, PairBulkAction

FORM_SECONDS = 300
GENERATION_KEY = "dashboard:pair-form:generation"
HISTORY_SHOWN = 20
WRITING_KINDS = (TaskKind.WRITING, TaskKind.ADVERSARIAL)


@dataclass(frozen=True)
class GenreChoice:
    slug: str
    name: str


@dataclass(frozen=True)
class StudyChoice:
    slug: str
    name: str
    team_id: int


@dataclass(frozen=True)
class BulkShown:
    token: str
    kind: str
    kind_display: str
    actor: str  # the actor's username; "" when the account is gone
    described: str
    reason: str
    changed: int
    created_at: datetime
    undone_at: datetime | None
    undone_count: int | None


@dataclass(frozen=True)
class PairForm:
    genres: list[GenreChoice]  # by name
    studies: list[StudyChoice]  # the writing studies, by slug
    writing_checks: dict[int, int]  # dataset id -> the annotator a study of it checks writing with
    bulk_history: list[BulkShown]  # newest first


def _json_rows(rows: QuerySet[Any]) -> tuple[str, tuple[Any, ...]]:
    """A subquery that reads `rows` (a values() queryset) as one JSON array of objects, in order."""
    found = sql_of(rows)
    if found is None:
        return "'[]'::jsonb", ()
    sql, params = found
    return f"(SELECT coalesce(jsonb_agg(to_jsonb(r)), '[]'::jsonb) FROM ({sql}) r)", params


def _history(teams: set[int] | None) -> QuerySet[Any]:
    """The latest bulk actions of `teams` (None: every team), newest first."""
    rows = PairBulkAction.objects.all()
    if teams is not None:
        rows = rows.filter(teams__in=teams).distinct()
    fields = ("pk", "token", "kind", "actor__username", "described", "reason", "changed", "created_at")
    latest: QuerySet[Any] = rows.values(*fields, "undone_at", "undone_count")[:HISTORY_SHOWN]
    return latest


def _read(teams: set[int] | None) -> PairForm:
    parts = [
        _json_rows(Genre.objects.order_by("name", "pk").values("slug", "name")),
        _json_rows(
            Study.objects.filter(task_kind__in=WRITING_KINDS).order_by("slug").values("slug", "name", "team_id")
        ),
        _json_rows(
            ModelUse.objects.filter(writing_checks_annotator__isnull=False)
            .order_by("pk")
            .values("study__dataset_id", "writing_checks_annotator_id")
        ),
        _json_rows(_history(teams)),
    ]
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT " + ", ".join(sql for sql, _ in parts), [param for _, params in parts for param in params]
        )
        genres, studies, uses, history = (_loaded(value) for value in cursor.fetchone())
    kinds = dict(BulkActionKind.choices)
    history.sort(key=lambda row: (row["created_at"], row["pk"]), reverse=True)
    return PairForm(
        genres=[GenreChoice(row["slug"], row["name"]) for row in genres],
        studies=[StudyChoice(row["slug"], row["name"], row["team_id"]) for row in studies],
        writing_checks={row["study__dataset_id"]: row["writing_checks_annotator_id"] for row in uses},
        bulk_history=[
            BulkShown(
                token=row["token"],
                kind=row["kind"],
                kind_display=str(kinds.get(row["kind"], row["kind"])),
                actor=row["actor__username"] or "",
                described=row["described"],
                reason=row["reason"],
                changed=row["changed"],
                created_at=datetime.fromisoformat(row["created_at"]),
                undone_at=datetime.fromisoformat(row["undone_at"]) if row["undone_at"] else None,
                undone_count=row["undone_count"],
            )
            for row in history
        ],
    )


def _loaded(value: Any) -> list[dict[str, Any]]:
    return json.loads(value) if isinstance(value, str) else list(value)


def _generation() -> int:
    """The form's current generation: a new one (the time) when a writer forgot the kept forms, or
    when the cache lost the mark (an evicted mark must not bring an older form back)."""
    generation = cache.get(GENERATION_KEY)
    if generation is None:
        generation = time.time_ns()
        if not cache.add(GENERATION_KEY, generation, None):
            generation = cache.get(GENERATION_KEY, generation)
    return int(generation)


def pair_form(user: Any) -> PairForm:
    """The form of the teams where `user` may do research, from the cache or one statement."""
    teams = access.team_ids(user, access.RESEARCH)
    scope = "all" if teams is None else ",".join(str(team) for team in sorted(teams)) or "none"
    key = f"dashboard:pair-form:{source_release()}:{_generation()}:{scope}"
    form: PairForm | None = cache.get(key)
    if form is None:
        form = _read(teams)
        cache.set(key, form, FORM_SECONDS)
    return form


def forget(**kwargs: Any) -> None:
    """Every kept form is out of date now (the writer's next page shows the change) and again once
    the writer commits (a page that read the rows meanwhile kept what it read)."""
    cache.set(GENERATION_KEY, time.time_ns(), None)
    transaction.on_commit(lambda: cache.set(GENERATION_KEY, time.time_ns(), None))
