"""Who is a researcher, and what each researcher action needs.

A researcher is an active staff account holding RESEARCH_ACCESS, which the `researchers` group
grants (a data migration creates the group; `manage.py grant_researcher NAME` makes an account
staff and puts it in the group). The staff flag alone grants nothing: it only lets an account
reach the admin's login, and the admin shows it only what its permissions allow. Superusers hold
every permission, as in Django, but are researchers only when staff too.
Each action that changes what workers are paid or which labels count needs its own permission
on top, so a group with fewer rights can be made in the admin.
"""

from typing import TYPE_CHECKING, Any

from rest_framework.permissions import BasePermission

if TYPE_CHECKING:  # rest_framework.views reads the settings, which name IsResearcher below
    from rest_framework.request import Request
    from rest_framework.views import APIView

RESEARCHER_GROUP = "researchers"
RESEARCH_ACCESS = "corpus.use_research_tools"
EXCLUDE_WORKERS = "corpus.exclude_worker"
PAY_BONUSES = "corpus.pay_bonus"
LABEL_REFERENCE_PAIRS = "quality.add_referencelabel"
LAUNCH_TRAINING = "modeling.add_trainingrun"
CREATE_SNAPSHOTS = "modeling.add_snapshot"
IMPORT_DATA = "importers.add_corpusimport"  # premise and corpus files uploaded on the dashboard
CHANGE_STUDY = "crowd.change_study"  # a study set up on the dashboard (the group has crowd's permissions)
# The audit log in the admin, as on the dashboard: their teams' entries, read only (audit/admin.py).
READ_AUDIT_LOG = "audit.view_auditentry"
RESEARCHER_ACTIONS = [
    RESEARCH_ACCESS,
    EXCLUDE_WORKERS,
    PAY_BONUSES,
    LABEL_REFERENCE_PAIRS,
    LAUNCH_TRAINING,
    READ_AUDIT_LOG,
]
# The group also gets every model permission of these apps, so its members can use the admin as the
# superusers who ran studies before the group existed did (auth's own models stay out: no member
# can grant rights).
PROJECT_APPS = ["corpus", "crowd", "collection", "validation", "importers", "modeling", "artifacts", "quality"]


def is_researcher(user: Any) -> bool:
    # Staff as well: the admin is part of a researcher's tools and admits staff only.
    return bool(user and user.is_authenticated and user.is_active and user.is_staff and user.has_perm(RESEARCH_ACCESS))


def may(user: Any, permission: str) -> bool:
    """A researcher holding `permission` (an "app_label.codename")."""
    return is_researcher(user) and user.has_perm(permission)


# The permission rows last found complete in this process, as (rows, highest id) of the permission
# and content type tables: rows deleted or added since change one of the four (ids are never reused).
_complete_permission_rows: tuple[Any, ...] | None = None


def _permission_rows(permission_model: Any, content_type_model: Any) -> tuple[Any, ...]:
    from django.db.models import Count, Max

    permissions = permission_model.objects.aggregate(rows=Count("id"), last=Max("id"))
    content_types = content_type_model.objects.aggregate(rows=Count("id"), last=Max("id"))
    return (permissions["rows"], permissions["last"], content_types["rows"], content_types["last"])


def ensure_researcher_group(group_model: Any = None, permission_model: Any = None) -> Any:
    """The researcher group with its permissions (idempotent). A migration passes its historical models."""
    from django.db.models import Q

    if group_model is None:
        from django.apps import apps
        from django.contrib.auth.management import create_permissions
        from django.contrib.auth.models import Group as group_model
        from django.contrib.auth.models import Permission as permission_model
        from django.contrib.contenttypes.models import ContentType

        # The permission rows `migrate` leaves (post_migrate): made here if they are missing (a
        # flushed test database, a model added since), so the group never lacks one. Checked once
        # for the rows as they are: create_permissions asks a query per model (some 60 in all),
        # which every researcher made paid; the tables' counts are two.
        global _complete_permission_rows
        if _permission_rows(permission_model, ContentType) != _complete_permission_rows:
            ContentType.objects.clear_cache()
            for app_config in apps.get_app_configs():
                create_permissions(app_config, verbosity=0)
            _complete_permission_rows = _permission_rows(permission_model, ContentType)
    group, _ = group_model.objects.get_or_create(name=RESEARCHER_GROUP)
    wanted = Q(content_type__app_label__in=PROJECT_APPS)
    for name in RESEARCHER_ACTIONS:
        app_label, codename = name.split(".")
        wanted |= Q(content_type__app_label=app_label, codename=codename)
    group.permissions.add(*permission_model.objects.filter(wanted))
    return group


class IsResearcher(BasePermission):
    message = "Researcher rights are required."

    def has_permission(self, request: "Request", view: "APIView") -> bool:
        return is_researcher(request.user)


def researcher_with(permission: str) -> type[BasePermission]:
    """A DRF permission class: a researcher who also holds `permission`."""

    class ResearcherWith(IsResearcher):
        message = f"Researcher rights and the permission {permission} are required."

        def has_permission(self, request: "Request", view: "APIView") -> bool:
            return may(request.user, permission)

    ResearcherWith.__name__ = f"ResearcherWith_{permission.replace('.', '_')}"
    return ResearcherWith
