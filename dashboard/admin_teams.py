"""The admin, narrowed to the user's teams (teams.access), and the teams' own admin.

The admin classes stay their apps'; at start this module (the dashboard sits above every app, so
it may name their models) gives each registered admin whose model hangs from a team root (a
dataset, a study, a snapshot) a queryset and foreign-key choices of the user's teams only. A
model that hangs from no root is listed in GLOBAL_MODELS with why; tests/test_team_access.py
fails on a registered model that is in neither, so a new admin cannot escape.

Membership changes made here are recorded in the audit log (audit.record).
"""

from collections import deque
from typing import Any

from django.contrib import admin
from django.db import models, transaction
from django.http import HttpRequest

from audit import services as audit
from corpus.models import Dataset
from crowd.models import Study
from modeling.models import Snapshot
from teams import access
from teams.models import Membership, Team

ROOTS: tuple[type[models.Model], ...] = (Dataset, Study, Snapshot)
# Shared by every team, on purpose: the crowd's workers (one person may work for several labs)
# and the vocabulary of the papers (genres, prompts); the audit log scopes itself.
GLOBAL_MODELS = {
    "auth.user": "accounts: managed by superusers",
    "auth.group": "permission groups: managed by superusers",
    "authtoken.tokenproxy": "API tokens: a token carries its owner's teams and roles",
    "corpus.genre": "the papers' genres, shared",
    "corpus.promptfamily": "the genres' prompt families, shared",
    "corpus.worker": "a crowd worker may work for several teams",
    "audit.auditentry": "scoped by its own admin (team_id)",
    "teams.team": "scoped below (the user's teams)",
}


def team_path(model: type[models.Model], depth: int = 4) -> str | None:
    """The shortest lookup path of forward foreign keys from `model` to a team ("team",
    "dataset__team", ...), or None when it hangs from no root."""
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


def _scope(model_admin: admin.ModelAdmin[Any], path: str) -> None:
    original_queryset = model_admin.get_queryset
    original_fk = model_admin.formfield_for_foreignkey
    original_m2m = model_admin.formfield_for_manytomany

    def get_queryset(request: HttpRequest) -> Any:
        return access.scoped(original_queryset(request), request.user, access.VIEW, via=path)

    def formfield_for_foreignkey(db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        field = original_fk(db_field, request, **kwargs)
        target = db_field.related_model
        rows = getattr(field, "queryset", None)
        if field is None or rows is None:
            return field
        if target is Team:
            field.queryset = access.scoped(rows, request.user, access.RESEARCH, via="pk")
        elif (target_path := team_path(target)) is not None:
            field.queryset = access.scoped(rows, request.user, access.VIEW, via=target_path)
        return field

    def formfield_for_manytomany(db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        # The choices of a many-to-many field too (a qualification test's items are reference
        # labels): another team's rows are never offered, so never shown by their text.
        field = original_m2m(db_field, request, **kwargs)
        rows = getattr(field, "queryset", None)
        if field is not None and rows is not None and (target_path := team_path(db_field.related_model)) is not None:
            field.queryset = access.scoped(rows, request.user, access.VIEW, via=target_path)
        return field

    model_admin.get_queryset = get_queryset  # type: ignore[method-assign]
    model_admin.formfield_for_foreignkey = formfield_for_foreignkey  # type: ignore[method-assign]
    model_admin.formfield_for_manytomany = formfield_for_manytomany  # type: ignore[method-assign]


def scope_every_admin(site: admin.AdminSite) -> dict[str, str]:
    """Narrow every registered admin with a path to a team; the paths, by model label."""
    paths: dict[str, str] = {}
    for model, model_admin in site._registry.items():
        path = team_path(model)
        if path is not None:
            _scope(model_admin, path)
            paths[model._meta.label_lower] = path
    return paths


class MembershipInline(admin.TabularInline[Membership, Team]):
    model = Membership
    extra = 1


class TeamAdmin(admin.ModelAdmin[Team]):
    """Teams and their members; only a team's owners (and superusers) change who is in it."""

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
