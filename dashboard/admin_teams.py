"""The admin is a door that checks: every registered admin answers to the user's teams and roles.

At start `guard_every_admin` puts the common base `TeamDoor` in front of each registered admin's
class (the dashboard sits above every app, so it may name their models). For a model that hangs
from a team root (a dataset, a study, a snapshot) the door

- lists, opens and offers in forms and list filters only the rows of the user's teams;
- lets a user write only with the role's right in the row's team ("research" for data, "money"
  for markets, payments and held codes, "label" for reference labels and adjudications, "members"
  for a team);
- writes every save, delete and action to the audit log in the same transaction.

A model that hangs from no root is listed in GLOBAL_MODELS with why: only superusers change it.
Crowd workers are listed to a team only when they worked for it; the fields payments follow
(market, market id, account) and the trust flag are read-only for everyone but superusers;
excluding one is a team's own decision. tests/test_admin_access.py fails on an admin without the door.
"""

from collections import deque
from collections.abc import Callable
from typing import Any

from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import models, transaction
from django.db.models import Q, QuerySet
from django.forms.models import BaseInlineFormSet
from django.http import HttpRequest

from audit import services as audit
from corpus.models import Dataset, Pair, ValidationLabel, Worker
from crowd.models import Study, StudySession
from modeling.models import Snapshot
from teams import access
from teams.models import Membership, Role, Team

ROOTS: tuple[type[models.Model], ...] = (Dataset, Study, Snapshot)
# Shared by every team, on purpose: the crowd's workers (one person may work for several labs)
# and the vocabulary of the papers (genres, prompts); the audit log scopes itself.
GLOBAL_MODELS = {
    "auth.user": "accounts: managed by superusers",
    "auth.group": "permission groups: managed by superusers",
    "authtoken.tokenproxy": "API tokens: a token carries its owner's teams and roles",
    "corpus.genre": "the papers' genres, shared",
    "corpus.promptfamily": "the genres' prompt families, shared",
    "corpus.worker": "a crowd worker may work for several teams: listed to the teams they worked for",
    "audit.auditentry": "scoped by its own admin (team_id)",
    "teams.team": "scoped below (the user's teams)",
}
# The right a role needs in a row's team to change it, where it is not "research".
WRITE_ACTION = {
    "teams.team": access.MEMBERS,
    "crowd.studysession": access.MONEY,  # releasing a held code makes its bonus payable
    "quality.bonusentry": access.MONEY,
    "quality.referencelabel": access.LABEL,
    "corpus.adjudication": access.LABEL,
}
WRITE_ACTION_OF_APP = {"markets": access.MONEY}
# Actions on shared rows that act only in the user's own teams (the service takes the teams), so a
# researcher may run them: the worker's exclusion is the team's own decision.
TEAM_ACTIONS_ON_SHARED_ROWS = {"corpus.worker": frozenset({"exclude_workers", "include_workers"})}
# Actions whose service writes its own audit entries (or whose deletes `delete_queryset` records).
SELF_RECORDING_ACTIONS = frozenset({"delete_selected", "exclude_workers", "include_workers"})


def team_path(model: type[models.Model], depth: int = 4) -> str | None:
    """The shortest path of forward foreign keys from `model` to a team ("dataset__team"), or None."""
    if model in ROOTS:
        return "team"
    seen = {model}
    queue: deque[tuple[type[models.Model], str]] = deque([(model, "")])
    while queue:
        current, path = queue.popleft()
        if path.count("__") >= depth:
            continue
        for field in current._meta.get_fields():
            if not (field.many_to_one or field.one_to_one) or not field.concrete:
                continue
            target = field.related_model
            if not isinstance(target, type) or target in seen:
                continue
            step = f"{path}__{field.name}" if path else field.name
            if target in ROOTS:
                return f"{step}__team"
            seen.add(target)
            queue.append((target, step))
    return None


def path_to_team(model: type[models.Model]) -> str | None:
    """`team_path`, and "pk" for a team itself."""
    return "pk" if model is Team else team_path(model)


def write_action(model: type[models.Model]) -> str:
    label = model._meta.label_lower
    return WRITE_ACTION.get(label) or WRITE_ACTION_OF_APP.get(model._meta.app_label, access.RESEARCH)


def workers_of_teams(workers: QuerySet[Worker], teams: set[int]) -> QuerySet[Worker]:
    """The workers who worked for these teams: a session in their studies, a pair written or a
    label given on their datasets. A worker who never did is none of the team's business."""
    return workers.filter(
        Q(pk__in=StudySession.objects.filter(study__team__in=teams).values("worker_id"))
        | Q(pk__in=ValidationLabel.objects.filter(pair__dataset__team__in=teams).values("worker_id"))
        | Q(pk__in=Pair.objects.filter(dataset__team__in=teams).values("author_id"))
    )


def _team_ids(request: HttpRequest, action: str) -> set[int] | None:
    """access.team_ids, read once per request and action: the sidebar asks it of every model."""
    known: dict[str, set[int] | None] = request.__dict__.setdefault("_door_team_ids", {})
    if action not in known:
        known[action] = access.team_ids(request.user, action)
    return known[action]


def _is_superuser(request: HttpRequest) -> bool:
    return _team_ids(request, access.VIEW) is None


class TeamRelatedFieldListFilter(RelatedFieldListFilter):
    """A list filter on a relation to a team's model offers only the user's teams' rows."""

    def field_choices(self, field: Any, request: HttpRequest, model_admin: admin.ModelAdmin[Any]) -> Any:
        path = path_to_team(field.related_model)
        teams = _team_ids(request, access.VIEW)
        if path is None or teams is None:
            return super().field_choices(field, request, model_admin)
        ordering = self.field_admin_ordering(field, request, model_admin)
        return field.get_choices(include_blank=False, limit_choices_to=Q(**{f"{path}__in": teams}), ordering=ordering)


def _relates_to_a_team(field: Any) -> bool:
    target = field.related_model if field.remote_field else None
    return isinstance(target, type) and path_to_team(target) is not None


admin.FieldListFilter.register(_relates_to_a_team, TeamRelatedFieldListFilter, take_priority=True)


class TeamDoor(admin.ModelAdmin[Any]):
    """The common base of every registered admin (put in front of its class at start)."""

    door_path: str | None = None  # the lookup path to the row's team; None for a shared model
    door_action: str = access.RESEARCH  # the right a write needs in that team
    # What the admin records itself ("save": its save_model, "formsets": its save_formset).
    audits_itself: frozenset[str] = frozenset()

    # --- what the user sees ---------------------------------------------------------------------

    def get_queryset(self, request: HttpRequest) -> Any:
        rows = super().get_queryset(request)
        teams = _team_ids(request, access.VIEW)
        if teams is None:
            return rows
        if self.door_path is not None:
            return rows.filter(**{f"{self.door_path}__in": teams})
        if self.model is Worker:
            return workers_of_teams(rows, teams)
        return rows

    def formfield_for_foreignkey(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        return self._narrowed_choices(field, db_field, request)

    def formfield_for_manytomany(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # A many-to-many field too (a qualification test's items are reference labels): another
        # team's rows are never offered, so never shown by their text.
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        return self._narrowed_choices(field, db_field, request)

    def _narrowed_choices(self, field: Any, db_field: Any, request: HttpRequest) -> Any:
        rows = getattr(field, "queryset", None)
        path = path_to_team(db_field.related_model)
        if field is None or rows is None or path is None:
            return field
        # A new row may hang only from a row of a team where the user may write it.
        field.queryset = access.scoped(rows, request.user, self.door_action, via=path)
        return field

    # --- what the user may do ---------------------------------------------------------------------

    def may_write(self, request: HttpRequest, obj: Any = None) -> bool:
        """Whether the user's role may change `obj` (None: some row of this admin)."""
        user = request.user
        if _is_superuser(request):
            return True
        if self.door_path is None:
            return False  # a shared row: another team's work depends on it
        if obj is None:
            return bool(_team_ids(request, self.door_action))
        return access.may(user, access.team_of(obj, self.door_path), self.door_action)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        path = self.door_path
        if obj is not None and path is not None and not _is_superuser(request):
            return access.may(request.user, access.team_of(obj, path), access.VIEW) and super().has_view_permission(
                request, obj
            )
        return super().has_view_permission(request, obj)

    def has_add_permission(self, request: HttpRequest, *args: Any) -> bool:
        return self.may_write(request) and super().has_add_permission(request, *args)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_write(request, obj) and super().has_change_permission(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self.may_write(request, obj) and super().has_delete_permission(request, obj)

    def require_write(self, request: HttpRequest, obj: Any) -> None:
        if not self.may_write(request, obj):
            raise PermissionDenied(f"Your role may not change this ({self.door_action} in its team).")

    def require_write_all(self, request: HttpRequest, rows: QuerySet[Any]) -> None:
        """Every row of `rows` is one the user may change: a selection is acted on whole or not at all."""
        if _is_superuser(request):
            return
        if (
            self.door_path is None
            or rows.exclude(**{f"{self.door_path}__in": _team_ids(request, self.door_action) or set()}).exists()
        ):
            raise PermissionDenied(f"Your role may not change every selected row ({self.door_action}).")

    def get_actions(self, request: HttpRequest) -> Any:
        actions: dict[str, Any] = super().get_actions(request) or {}
        shared_ok = TEAM_ACTIONS_ON_SHARED_ROWS.get(self.model._meta.label_lower, frozenset())
        kept = {}
        for name, (func, action_name, description) in actions.items():
            on_own_teams = name in shared_ok and bool(_team_ids(request, access.RESEARCH))
            if self.may_write(request) or on_own_teams:
                kept[name] = (self._guarded(func, name, checks_rows=not on_own_teams), action_name, description)
        return kept

    def _guarded(self, func: Callable[..., Any], name: str, *, checks_rows: bool) -> Callable[..., Any]:
        def guarded(model_admin: Any, request: HttpRequest, queryset: QuerySet[Any]) -> Any:
            with transaction.atomic():
                if checks_rows:
                    self.require_write_all(request, queryset)
                if name in SELF_RECORDING_ACTIONS:
                    return func(model_admin, request, queryset)
                chosen = list(queryset.values_list("pk", flat=True))
                response = func(model_admin, request, queryset)
                self._record_rows(request, f"admin.action.{name}", chosen)
                return response

        guarded.__name__ = name
        return guarded

    # --- what the audit log keeps ---------------------------------------------------------------------

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        self.require_write(request, obj)  # the row's team as the form left it (a move: the new team)
        model = type(obj)
        columns = {f.name: f.attname for f in model._meta.concrete_fields if f.name in form.changed_data}
        stored = model._default_manager.filter(pk=obj.pk).first() if change else None
        if stored is not None:
            self.require_write(request, stored)  # and the team it leaves
        super().save_model(request, obj, form, change)
        if "save" in self.audits_itself:
            return
        audit.record(
            "admin.changed" if change else "admin.added",
            actor=request.user,
            subject=obj,
            team_id=self._team_of(obj),
            before={name: getattr(stored, attname) for name, attname in columns.items()} if stored else {},
            after={name: getattr(obj, attname) for name, attname in columns.items()},
        )

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        super().save_formset(request, form, formset, change)
        if "formsets" in self.audits_itself:
            return
        added = [row.pk for row in getattr(formset, "new_objects", [])]
        changed = {str(row.pk): fields for row, fields in getattr(formset, "changed_objects", [])}
        deleted = [str(row) for row in getattr(formset, "deleted_objects", [])]
        if added or changed or deleted:
            audit.record(
                "admin.inline_changed",
                actor=request.user,
                subject=form.instance,
                team_id=self._team_of(form.instance),
                after={"rows": formset.model._meta.label_lower, "added": added, "changed": changed, "deleted": deleted},
            )

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        self.require_write(request, obj)
        audit.record(
            "admin.deleted",
            actor=request.user,
            subject=obj,
            team_id=self._team_of(obj),
            before={f.name: getattr(obj, f.attname) for f in obj._meta.concrete_fields},
        )
        super().delete_model(request, obj)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        self.require_write_all(request, queryset)
        self._record_rows(request, "admin.deleted", list(queryset.values_list("pk", flat=True)))
        super().delete_queryset(request, queryset)

    def _record_rows(self, request: HttpRequest, action: str, pks: list[Any]) -> None:
        """One entry per team of the rows: which rows the user acted on."""
        rows = self.model._default_manager.filter(pk__in=pks)
        if self.door_path is None:
            by_team: dict[int | None, list[Any]] = {None: pks}
        else:
            by_team = {}
            for pk, team_id in rows.values_list("pk", self.door_path):
                by_team.setdefault(team_id, []).append(pk)
        for team_id, team_pks in sorted(by_team.items(), key=lambda item: item[0] or 0):
            audit.record(
                action,
                actor=request.user,
                subject_type=self.model._meta.label_lower,
                subject_id=",".join(str(pk) for pk in team_pks),
                subject_label=f"{len(team_pks)} {self.model._meta.verbose_name_plural}",
                team_id=team_id,
                after={"rows": team_pks},
            )

    def _team_of(self, obj: Any) -> int | None:
        return None if self.door_path is None else access.team_of(obj, self.door_path)


def guard_every_admin(site: admin.AdminSite) -> dict[str, str]:
    """Put `TeamDoor` in front of every registered admin's class; the team paths, by model label."""
    paths: dict[str, str] = {}
    for model, model_admin in site._registry.items():
        path = path_to_team(model)
        if path is not None and path != "pk":
            paths[model._meta.label_lower] = path
        if isinstance(model_admin, TeamDoor):
            continue
        cls = type(model_admin)
        model_admin.__class__ = type(
            cls.__name__,
            (TeamDoor, cls),
            {
                "__module__": cls.__module__,
                "door_path": path,
                "door_action": write_action(model),
                # An admin that writes its own audit entries says so; the door then adds none beside them.
                "audits_itself": getattr(cls, "audits_itself", frozenset()),
            },
        )
    return paths


class MembershipFormSet(BaseInlineFormSet[Any, Any, Any]):
    """The team's members as the admin edits them: a team that has an owner keeps one (as on the
    dashboard's Team page, teams.services.keep_an_owner)."""

    def clean(self) -> None:
        super().clean()
        had_owner = Membership.objects.filter(team_id=self.instance.pk, role=Role.OWNER).exists()
        kept = [
            form
            for form in self.forms
            if form.cleaned_data and not form.cleaned_data.get("DELETE") and form.cleaned_data.get("role") == Role.OWNER
        ]
        if had_owner and not kept:
            raise ValidationError("A team keeps an owner: make another member owner before this one leaves.")


class MembershipInline(admin.TabularInline[Membership, Team]):
    model = Membership
    formset = MembershipFormSet
    extra = 1


class TeamAdmin(admin.ModelAdmin[Team]):
    """Teams and their members; only a team's owners (and superusers) change who is in it."""

    audits_itself = frozenset({"formsets"})  # each membership change is its own entry

    list_display = ["slug", "name", "created_at"]
    inlines = [MembershipInline]
    prepopulated_fields = {"slug": ("name",)}

    def get_queryset(self, request: HttpRequest) -> Any:
        return access.scoped(super().get_queryset(request), request.user, access.VIEW, via="pk")

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        if obj is not None and not access.may(request.user, obj.pk, access.MEMBERS):
            return False
        return super().has_change_permission(request, obj)

    def has_add_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.is_superuser)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return bool(request.user.is_superuser)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        with transaction.atomic():
            before = {m.pk: m.role for m in Membership.objects.filter(team=form.instance)}
            super().save_formset(request, form, formset, change)
            for membership in formset.new_objects:
                audit.record(
                    "team.member_added",
                    actor=request.user,
                    subject=membership,
                    team_id=form.instance.pk,
                    after={"user": str(membership.user), "role": membership.role},
                )
            for membership, _fields in formset.changed_objects:
                audit.record(
                    "team.member_role",
                    actor=request.user,
                    subject=membership,
                    team_id=form.instance.pk,
                    before={"role": before.get(membership.pk)},
                    after={"role": membership.role},
                )
            for membership in formset.deleted_objects:
                audit.record(
                    "team.member_removed",
                    actor=request.user,
                    subject_type="teams.membership",
                    subject_label=str(membership.user),
                    team_id=form.instance.pk,
                    before={"user": str(membership.user), "role": membership.role},
                )
