"""Researchers are the `researchers` group's members (base/permissions.py): a staff flag
alone grants nothing, and each action that pays, excludes, labels or launches needs its permission."""

import importlib

import pytest
from django.apps import apps as django_apps
from django.contrib.auth.models import Group, Permission
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from base.permissions import (
    EXCLUDE_WORKERS,
    LABEL_REFERENCE_PAIRS,
    LAUNCH_TRAINING,
    PAY_BONUSES,
    READ_AUDIT_LOG,
    RESEARCH_ACCESS,
    RESEARCHER_GROUP,
    ensure_researcher_group,
    is_researcher,
)
from corpus.models import Label, Market
from modeling.models import Snapshot, TrainingRun
from quality.models import BonusEntry, BonusKind, ReferenceLabel
from teams.models import Role
from teams.services import join
from tests.quality.test_catch_trials import catch_pair, earn, make_study, session_for
from tests.validation.validation_factories import make_dataset, make_pair

pytestmark = pytest.mark.django_db


def permission(name):
    app_label, codename = name.split(".")
    return Permission.objects.get(content_type__app_label=app_label, codename=codename)


@pytest.fixture
def staff_only(django_user_model):
    return django_user_model.objects.create_user(username="staff", password="staff-pass-1", is_staff=True)


@pytest.fixture
def attack_targets(make_worker):
    """What the attack did: a worker to exclude, a bonus to pay, a pair to make a catch trial of."""
    dataset = make_dataset()
    study = make_study(dataset, bonus="1.00", currency="GBP")
    worker = make_worker(market=Market.PROLIFIC, external_id="PID9")
    bonus = earn(study, worker, catch_pair(dataset), session_for(study, worker, "S9"))
    snapshot = Snapshot.objects.create(status="done", content_hash="f" * 64)
    return {"study": study, "worker": worker, "bonus": bonus, "pair": make_pair(dataset), "snapshot": snapshot}


def attempt_every_action(client, targets):
    """The researcher actions, each as the dashboard sends it; the status code of each."""
    return {
        "exclude": client.post(
            reverse("dashboard:worker_exclusion"), {"action": "exclude", "worker": targets["worker"].pk}
        ).status_code,
        "pay": client.post(
            reverse("dashboard:bonus_pay", args=[targets["study"].slug]),
            {"bonus": targets["bonus"].pk, "confirm": "paid"},
        ).status_code,
        "catch trial": client.post(
            reverse("dashboard:label_pairs"),
            {"pair": targets["pair"].pk, "label": Label.NEUTRAL, "is_catch_trial": "on"},
        ).status_code,
        "train": client.post(
            reverse("dashboard:training"), {"snapshot": targets["snapshot"].pk, "model": "majority"}
        ).status_code,
    }


def nothing_happened(targets):
    targets["worker"].refresh_from_db()
    return (
        not targets["worker"].exclusions.exists()
        and not BonusEntry.objects.filter(kind=BonusKind.PAID).exists()
        and not ReferenceLabel.objects.filter(pair=targets["pair"]).exists()
        and not TrainingRun.objects.exists()
    )


def test_a_staff_account_without_the_group_is_no_researcher_anywhere(client, staff_only, attack_targets):
    assert not is_researcher(staff_only)
    client.force_login(staff_only)
    assert attempt_every_action(client, attack_targets) == {
        "exclude": 403,
        "pay": 403,
        "catch trial": 403,
        "train": 403,
    }
    assert nothing_happened(attack_targets)
    assert client.get(reverse("dashboard:collection")).status_code == 403
    assert client.get("/api/snapshots/").status_code == 403
    assert client.get("/admin/").status_code == 403
    assert client.get(reverse("admin:corpus_worker_changelist")).status_code == 403


def test_a_researcher_lacking_one_permission_cannot_do_that_one_thing(client, staff_only, attack_targets):
    """A narrower group: dashboard access and every action but the four; each is refused by itself."""
    readers = Group.objects.create(name="readers")
    readers.permissions.add(permission(RESEARCH_ACCESS))
    staff_only.groups.add(readers)
    client.force_login(staff_only)
    assert client.get(reverse("dashboard:collection")).status_code == 200
    assert attempt_every_action(client, attack_targets) == {
        "exclude": 403,
        "pay": 403,
        "catch trial": 403,
        "train": 403,
    }
    assert nothing_happened(attack_targets)
    api = client.post(
        "/api/training-runs/", {"snapshot": attack_targets["snapshot"].pk, "model": "majority"}, "application/json"
    )
    assert api.status_code == 403 and LAUNCH_TRAINING in api.json()["detail"]
    changelist = client.post(
        reverse("admin:corpus_worker_changelist"),
        {"action": "exclude_workers", "_selected_action": [attack_targets["worker"].pk]},
    )
    assert changelist.status_code in (200, 302, 403)
    assert nothing_happened(attack_targets)


def test_the_group_grants_each_action(client, django_user_model, attack_targets):
    # A member of the group and nothing else (the suite's `researcher` fixture is also a superuser).
    researcher = django_user_model.objects.create_user(username="member", password="member-pass-1", is_staff=True)
    researcher.groups.add(ensure_researcher_group())
    # and an owner of the default team, where the targets are, as `grant_researcher` makes one (docs/teams.md)
    join(researcher, role=Role.OWNER)
    assert not researcher.is_superuser and is_researcher(researcher)
    for name in (EXCLUDE_WORKERS, PAY_BONUSES, LABEL_REFERENCE_PAIRS, LAUNCH_TRAINING):
        assert researcher.has_perm(name), name
    client.force_login(researcher)
    answers = attempt_every_action(client, attack_targets)
    assert answers["exclude"] == answers["pay"] == answers["catch trial"] == 302, answers
    attack_targets["worker"].refresh_from_db()
    assert attack_targets["worker"].exclusions.exists()
    assert BonusEntry.objects.filter(kind=BonusKind.PAID).count() == 1
    assert ReferenceLabel.objects.get(pair=attack_targets["pair"]).is_catch_trial


def test_the_data_migration_creates_the_group_with_its_permissions():
    Group.objects.filter(name=RESEARCHER_GROUP).delete()
    migration = importlib.import_module("dashboard.migrations.0001_researcher_group")
    migration.create_researcher_group(django_apps, None)
    group = Group.objects.get(name=RESEARCHER_GROUP)
    granted = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
    assert {RESEARCH_ACCESS, EXCLUDE_WORKERS, PAY_BONUSES, LABEL_REFERENCE_PAIRS, LAUNCH_TRAINING} <= granted
    assert not {name for name in granted if name.startswith("auth.")}, "members must not be able to grant rights"
    assert ensure_researcher_group() == group  # idempotent


def test_a_group_made_before_the_audit_admin_reads_the_audit_log_after_its_migration():
    group = ensure_researcher_group()
    group.permissions.remove(permission(READ_AUDIT_LOG))  # as the group's first migration left it
    migration = importlib.import_module("dashboard.migrations.0004_researchers_read_the_audit_log")
    migration.Migration.operations[0].code(django_apps, None)
    assert group.permissions.filter(pk=permission(READ_AUDIT_LOG).pk).exists()
    assert not group.permissions.filter(content_type__app_label="audit").exclude(codename="view_auditentry").exists()


def test_the_data_migration_run_on_the_real_registry_leaves_permissions_makeable(django_user_model):
    """Run with the real app registry (as the test above does), the migration once left every app
    without a models module: from then on post_migrate after a flush, and ensure_researcher_group,
    made no content type or permission, and later tests in the process found researchers refused."""
    migration = importlib.import_module("dashboard.migrations.0001_researcher_group")
    migration.create_researcher_group(django_apps, None)
    assert all(config.models_module is not None for config in django_apps.get_app_configs() if config.models)
    Permission.objects.filter(content_type__app_label="corpus").delete()  # as a flush leaves them
    user = django_user_model.objects.create_user(username="after-migration", is_staff=True)
    user.groups.add(ensure_researcher_group())
    assert is_researcher(django_user_model.objects.get(pk=user.pk))


def test_the_group_is_made_in_a_few_queries_when_every_permission_is_there_and_one_missing_is_made(
    django_assert_max_num_queries,
):
    """Every researcher made asked create_permissions' query per model (some 60): it runs once for the
    permission rows as they are, and again when rows were deleted or added since."""
    ensure_researcher_group()
    with django_assert_max_num_queries(8):
        group = ensure_researcher_group()
    Permission.objects.filter(codename="change_study").delete()
    assert ensure_researcher_group() == group
    assert group.permissions.filter(content_type__app_label="crowd", codename="change_study").exists()


def test_grant_researcher_makes_and_unmakes_a_researcher(django_user_model, make_worker):
    call_command("grant_researcher", "newcomer", "--create")
    user = django_user_model.objects.get(username="newcomer")
    assert user.is_staff and is_researcher(user) and not user.is_superuser
    call_command("grant_researcher", "newcomer", "--revoke")
    user = django_user_model.objects.get(pk=user.pk)
    assert not user.is_staff and not is_researcher(user)
    with pytest.raises(CommandError, match="No account"):
        call_command("grant_researcher", "nobody")
    worker = make_worker()
    with pytest.raises(CommandError, match="crowdworker"):
        call_command("grant_researcher", worker.user.username)
