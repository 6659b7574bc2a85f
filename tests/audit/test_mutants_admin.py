"""The audit log's admin list at the edges mutmut found unguarded: a researcher who is no superuser,
given the right to view the log, sees the entries of their own teams and those of no team (the
system's), never another team's."""

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from audit import services as audit
from base.permissions import ensure_researcher_group
from teams.models import Membership, Role, Team

pytestmark = pytest.mark.django_db


def test_a_researcher_lists_the_entries_of_their_team_and_of_no_team_never_another_teams(
    client: Client, django_user_model: type[User]
) -> None:
    """Fails if the audit admin shows a researcher another team's entries, or hides their own
    team's or the system's (no team) entries from them."""
    team_a = Team.objects.create(slug="audit-team-a", name="Audit team A")
    team_b = Team.objects.create(slug="audit-team-b", name="Audit team B")
    audit.record("study.settings", subject_type="crowd.study", subject_label="entry-of-team-a", team_id=team_a.pk)
    audit.record("study.settings", subject_type="crowd.study", subject_label="entry-of-team-b", team_id=team_b.pk)
    audit.record("study.settings", subject_type="crowd.study", subject_label="entry-of-no-team")
    user = django_user_model.objects.create_user("audit-reader", password="pw", is_staff=True)
    user.groups.add(ensure_researcher_group())
    user.user_permissions.add(Permission.objects.get(content_type__app_label="audit", codename="view_auditentry"))
    Membership.objects.create(team=team_a, user=user, role=Role.RESEARCHER)
    client.force_login(user)

    response = client.get(reverse("admin:audit_auditentry_changelist"))

    assert response.status_code == 200
    shown = {entry.subject for entry in response.context["cl"].result_list}
    assert shown == {"entry-of-team-a", "entry-of-no-team"}
    assert "entry-of-team-b" not in response.content.decode()
