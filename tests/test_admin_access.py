"""The admin is a door that checks: every registered admin, read from
admin.site._registry, for another team's owner, each role of the owning team and a superuser:
its list and its filters' choices, its change, add and delete pages and its actions. A new admin
registered without the common base (dashboard.admin_teams.TeamDoor) fails the first test."""

from datetime import timedelta
from typing import Any, cast

import pytest
from django.contrib import admin
from django.contrib.admin.filters import RelatedFieldListFilter
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from audit.models import AuditEntry
from corpus.models import Worker
from dashboard.admin_teams import GLOBAL_MODELS, TeamDoor, path_to_team
from teams import access
from teams.models import Membership, Role, Team
from tests.test_team_access import world  # noqa: F401  # the two teams' rows, every role's user

pytestmark = pytest.mark.django_db

ROLES = ["other_team", Role.OWNER, Role.RESEARCHER, Role.ANNOTATOR, "superuser"]


def _admins():
    return sorted(admin.site._registry.items(), key=lambda item: item[0]._meta.label_lower)


def _url(model, view, *args):
    try:
        return reverse(f"admin:{model._meta.app_label}_{model._meta.model_name}_{view}", args=args)
    except NoReverseMatch:
        return None


def _team_a_rows(world):  # noqa: F811
    """A row of team A for every admin whose model hangs from a team (where the world has one)."""
    team_a = Team.objects.get(slug="team-a")
    rows = {}
    for model, _model_admin in _admins():
        path = path_to_team(model)
        if path is not None:
            row = model._default_manager.filter(**{path: team_a.pk}).order_by("pk").first()
            if row is not None:
                rows[model] = row
    return rows


def _may_write(role, model):
    if role == "superuser":
        return True
    if role == "other_team" or model._meta.label_lower in GLOBAL_MODELS:
        return False
    return access.may_role(role, cast(Any, admin.site._registry[model]).door_action)


def _snapshot(row):
    return {f.attname: getattr(row, f.attname) for f in row._meta.concrete_fields}


def test_every_admin_stands_behind_the_door():
    for model, model_admin in _admins():
        label = model._meta.label_lower
        assert isinstance(model_admin, TeamDoor), f"{label}: registered without the common admin base"
        assert model_admin.door_path == path_to_team(model), label
        assert model_admin.door_path is not None or label in GLOBAL_MODELS, f"{label}: scope it or say why not"


def test_a_late_registration_would_be_caught():
    """What the test above relies on: an admin registered after the door was put up has none."""
    site = admin.AdminSite(name="late")
    site.register(Team, admin.ModelAdmin)
    assert not isinstance(site._registry[Team], TeamDoor)


@pytest.mark.parametrize("role", ROLES)
def test_every_admin_checks_the_team_and_the_role(client, world, role):  # noqa: F811
    user = world["users"][role]
    client.force_login(user)
    rows = _team_a_rows(world)
    team_a_names = {"dataset-a", "mpe-a", "study-a", "adv-a", "Team A"}
    for model, model_admin in _admins():
        label = model._meta.label_lower
        page = client.get(_url(model, "changelist"))
        assert page.status_code in (200, 403), label
        if page.status_code == 200:
            listed = {row.pk for row in page.context["cl"].result_list}
            if role == "other_team" and model in rows:
                assert rows[model].pk not in listed, f"{label}: another team's row listed"
            for spec in page.context["cl"].filter_specs:
                if isinstance(spec, RelatedFieldListFilter) and role == "other_team":
                    offered = {str(name) for _, name in spec.lookup_choices}
                    assert not offered & team_a_names, f"{label}: filter {spec.title} names team A's rows"
            offered_actions = set(model_admin.get_actions(page.wsgi_request))
            if role != "other_team" and not _may_write(role, model):  # B's own rows are B's to act on
                assert not offered_actions - set(_shared_actions(model)), f"{label}: actions offered to {role}"
        add = _url(model, "add")
        if add and role != "other_team" and not _may_write(role, model):
            assert client.post(add, {}).status_code in (403, 302), f"{label}: add open to {role}"
        row = rows.get(model)
        if row is None:
            continue
        before = _snapshot(row)
        change = _url(model, "change", row.pk)
        delete = _url(model, "delete", row.pk)
        if role == "other_team":
            seen = client.get(change)
            # Another team's row answers as an unknown one: the admin's "does not exist" redirect
            # (or 403 where the account may not see the model at all).
            assert seen.status_code in (302, 403, 404), f"{label}: another team's row opened"
            assert client.post(change, {}).status_code in (302, 403, 404), label
            assert client.post(delete, {"post": "yes"}).status_code in (302, 403, 404), label
        elif not _may_write(role, model):
            assert client.get(change).status_code in (200, 403), label  # seen, read only
            assert client.post(change, {}).status_code == 403, f"{label}: {role} may change"
            assert client.post(delete, {"post": "yes"}).status_code == 403, f"{label}: {role} may delete"
        for name in model_admin.actions or ():
            if not _may_write(role, model) and name not in _shared_actions(model):
                client.post(_url(model, "changelist"), {"action": name, "_selected_action": [row.pk]})
        if not _may_write(role, model):
            assert model._default_manager.filter(pk=row.pk).exists(), f"{label}: {role} deleted it"
            row.refresh_from_db()
            assert _snapshot(row) == before, f"{label}: {role} changed it"


def test_an_admin_page_reads_the_users_memberships_once_per_right_not_once_per_model(client, world):  # noqa: F811
    """The sidebar asks every registered admin for its permissions: each asking must not read the
    memberships again (one read per model and method would be most of an admin page's time)."""
    client.force_login(world["users"][Role.ANNOTATOR])
    with CaptureQueriesContext(connection) as queries:
        page = client.get(reverse("admin:corpus_pair_changelist"))
    assert page.status_code == 200
    # The account's own statement reads them too (teams.backends, unquoted).
    reads = [query for query in queries.captured_queries if "teams_membership" in query["sql"].replace('"', "")]
    assert 0 < len(reads) <= len(access.ACTIONS)


def test_a_membership_given_between_two_pages_is_seen_on_the_second(client, world):  # noqa: F811
    """What the door reads once per page it reads again on the next: a right given (or taken)
    counts from the next request on."""
    user = world["users"]["other_team"]
    pair = world["pair"]
    changelist = reverse("admin:corpus_pair_changelist")
    client.force_login(user)
    assert pair.pk not in {row.pk for row in client.get(changelist).context["cl"].result_list}
    Membership.objects.create(team=Team.objects.get(slug="team-a"), user=user, role=Role.RESEARCHER)
    assert pair.pk in {row.pk for row in client.get(changelist).context["cl"].result_list}


def _shared_actions(model):
    from dashboard.admin_teams import TEAM_ACTIONS_ON_SHARED_ROWS

    return TEAM_ACTIONS_ON_SHARED_ROWS.get(model._meta.label_lower, frozenset())


def _form_data(page):
    """The change form as the page shows it (its inlines' management forms too), ready to post."""
    data = {}
    form = page.context["adminform"].form
    forms = [form]
    for inline in page.context["inline_admin_formsets"]:
        management = inline.formset.management_form
        for name in management.fields:
            data[management.add_prefix(name)] = management[name].value()
        forms.extend(inline.formset.forms)
    for each in forms:
        for name in each.fields:
            value = each[name].value()
            if value is None or value is False:
                continue
            data[each.add_prefix(name)] = "on" if value is True else value
    return data


def _errors(response):
    form = response.context["adminform"].form
    return form.errors, [inline.formset.errors for inline in response.context["inline_admin_formsets"]]


def test_an_annotator_cannot_edit_a_hypothesis_and_a_researcher_leaves_an_audit_entry(client, world):  # noqa: F811
    pair = world["pair"]
    change = reverse("admin:corpus_pair_change", args=[pair.pk])
    client.force_login(world["users"][Role.RESEARCHER])
    data = _form_data(client.get(change))  # the form as a role that may change it sees it
    data["hypothesis"] = "A man is an astronaut."
    client.force_login(world["users"][Role.ANNOTATOR])
    assert client.post(change, data).status_code == 403
    pair.refresh_from_db()
    assert pair.hypothesis == "A man rests."

    client.force_login(world["users"][Role.RESEARCHER])
    response = client.post(change, data)
    assert response.status_code == 302, _errors(response)
    pair.refresh_from_db()
    assert pair.hypothesis == "A man is an astronaut."
    entry = AuditEntry.objects.get(action="admin.changed", subject_type="corpus.pair")
    assert entry.team_id == Team.objects.get(slug="team-a").pk
    assert entry.before == {"hypothesis": "A man rests."} and entry.after == {"hypothesis": "A man is an astronaut."}
    assert entry.actor == "r-researcher"


def test_an_action_and_a_delete_leave_audit_entries(client, world):  # noqa: F811
    pair = world["pair"]
    client.force_login(world["users"][Role.RESEARCHER])
    changelist = reverse("admin:corpus_pair_changelist")
    client.post(changelist, {"action": "mark_for_validation", "_selected_action": [pair.pk]})
    entry = AuditEntry.objects.get(action="admin.action.mark_for_validation")
    assert entry.after == {"rows": [pair.pk]} and entry.team_id == pair.dataset.team_id
    client.force_login(world["users"]["superuser"])
    premise_import = world["premise_import"]
    client.post(reverse("admin:collection_premiseimport_delete", args=[premise_import.pk]), {"post": "yes"})
    assert AuditEntry.objects.filter(action="admin.deleted", subject_id=str(premise_import.pk)).exists()


def test_an_action_on_rows_of_a_team_where_the_role_is_weaker_is_refused_whole(client, world, django_user_model):  # noqa: F811
    """A researcher of team B who is only an annotator in team A: the action is offered (they may
    run it in B), but a selection holding A's pair is refused, and nothing moves."""
    user = world["users"]["other_team"]
    Membership.objects.create(team=Team.objects.get(slug="team-a"), user=user, role=Role.ANNOTATOR)
    pair = world["pair"]
    client.force_login(user)
    changelist = reverse("admin:corpus_pair_changelist")
    response = client.post(changelist, {"action": "mark_for_validation", "_selected_action": [pair.pk]})
    assert response.status_code == 403
    pair.refresh_from_db()
    assert not pair.needs_validation
    assert not AuditEntry.objects.filter(action__startswith="admin.").exists()


def test_workers_are_listed_only_to_teams_they_worked_for_and_their_market_id_is_kept(client, world):  # noqa: F811
    worker = Worker.objects.get(external_id="w-a")
    changelist = reverse("admin:corpus_worker_changelist")
    change = reverse("admin:corpus_worker_change", args=[worker.pk])

    client.force_login(world["users"]["other_team"])
    assert "w-a" not in client.get(changelist).content.decode()
    assert client.get(change).status_code in (302, 404)
    refused = client.post(change, {"external_id": "b-id", "market": "prolific", "is_trusted": "on"})
    assert refused.status_code in (302, 403, 404)
    assert client.post(changelist, {"action": "trust_workers", "_selected_action": [worker.pk]}).status_code == 302

    client.force_login(world["users"][Role.OWNER])
    assert "w-a" in client.get(changelist).content.decode()
    assert client.get(change).status_code == 200
    client.force_login(world["users"]["superuser"])
    data = _form_data(client.get(change))  # the whole form, as only a superuser may post it
    data.update({"external_id": "b-id", "is_trusted": "on"})
    client.force_login(world["users"][Role.OWNER])
    assert client.post(change, data).status_code == 403  # the team's owner may not move its payments
    worker.refresh_from_db()
    assert (worker.external_id, worker.is_trusted, worker.market) == ("w-a", False, "local")


def test_exclude_in_the_admin_releases_the_workers_open_claims(client, world):  # noqa: F811
    from corpus.models import WorkerExclusion
    from validation.models import ValidationClaim

    worker = Worker.objects.get(external_id="w-a")
    session = worker.study_sessions.get()
    ValidationClaim.objects.create(
        pair=world["pair"], study_session=session, worker=worker, expires_at=timezone.now() + timedelta(hours=1)
    )
    client.force_login(world["users"][Role.RESEARCHER])
    client.post(
        reverse("admin:corpus_worker_changelist"), {"action": "exclude_workers", "_selected_action": [worker.pk]}
    )
    assert WorkerExclusion.objects.filter(worker=worker, team__slug="team-a").exists()
    assert not ValidationClaim.objects.filter(worker=worker, status="open").exists()
