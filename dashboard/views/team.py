"""The team pages: the user's teams, and for a team's owners its members (invite, role, remove).
Who may is `teams.access` (`members`: owners); the writes and their audit entries are
`dashboard.team_members`'."""

from typing import Any

from django.contrib import messages
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.views.decorators.http import require_GET, require_POST

from base.authenticated import AuthenticatedRequest
from dashboard import team_members as membership_changes
from teams import access, selectors
from teams.models import Membership, Role, Team

from .common import found, render_page, researcher_required

MISSING_TEAM = "No such team."


def _team(request: AuthenticatedRequest, slug: str) -> Team:
    """The team named, when the user may manage its members: another team's answers as an unknown
    slug does (404), a researcher's or annotator's own team 403."""
    team = found(selectors.team_named(slug), MISSING_TEAM)
    access.require(request.user, team.pk, access.MEMBERS, missing=MISSING_TEAM)
    return team


def _member(request: AuthenticatedRequest, slug: str, membership_id: int) -> tuple[Team, Membership]:
    team = _team(request, slug)
    return team, found(selectors.membership_in(team, membership_id), "No such member in this team.")


def _members_page(request: AuthenticatedRequest, team: Team, *, status: int = 200, **extra: Any) -> HttpResponseBase:
    return render_page(
        request,
        "dashboard/team_members.html",
        "team",
        status=status,
        team=team,
        members=selectors.members(team),
        roles=Role.choices,
        **extra,
    )


@researcher_required
@require_GET
def teams(request: AuthenticatedRequest) -> HttpResponseBase:
    return render_page(request, "dashboard/teams.html", "team", memberships=selectors.teams_of(request.user))


@researcher_required
@require_GET
def team_members(request: AuthenticatedRequest, slug: str) -> HttpResponseBase:
    return _members_page(request, _team(request, slug))


@researcher_required
@require_POST
def team_invite(request: AuthenticatedRequest, slug: str) -> HttpResponseBase:
    team = _team(request, slug)
    username = request.POST.get("username", "").strip()
    role = request.POST.get("role", Role.RESEARCHER)
    new_account = request.POST.get("new_account") == "on"
    try:
        invitation = membership_changes.invite_member(
            team, username=username, role=role, new_account=new_account, actor=request.user
        )
    except membership_changes.MembershipRefusedError as error:
        # The page again with what was typed, so nothing is lost.
        typed = {"username": username, "role": role, "new_account": new_account}
        return _members_page(request, team, status=400, invite_error=str(error), invite=typed)
    name = invitation.membership.user.get_username()
    if not invitation.set_password_path:
        messages.success(request, f"{name} is now {invitation.membership.role} of {team.name}.")
        return redirect("dashboard:team_members", slug=team.slug)
    # The link is shown once, on this answer, and kept nowhere else: the owner passes it on.
    link = request.build_absolute_uri(invitation.set_password_path)
    return _members_page(request, team, invited=name, invited_role=invitation.membership.role, set_password_link=link)


@researcher_required
@require_POST
def team_member_role(request: AuthenticatedRequest, slug: str, membership_id: int) -> HttpResponseBase:
    team, membership = _member(request, slug, membership_id)
    name = membership.user.get_username()
    try:
        changed = membership_changes.set_member_role(membership, request.POST.get("role", ""), actor=request.user)
    except membership_changes.MembershipRefusedError as error:
        messages.error(request, f"{error} Nothing was changed.")
    else:
        role = request.POST.get("role", "")
        messages.success(request, f"{name} is now {role}." if changed else f"{name} was {role} already.")
    return redirect("dashboard:team_members", slug=team.slug)


@researcher_required
@require_POST
def team_member_remove(request: AuthenticatedRequest, slug: str, membership_id: int) -> HttpResponseBase:
    team, membership = _member(request, slug, membership_id)
    name = membership.user.get_username()
    try:
        membership_changes.remove_member(membership, actor=request.user)
    except membership_changes.MembershipRefusedError as error:
        messages.error(request, f"{error} Nothing was changed.")
        return redirect("dashboard:team_members", slug=team.slug)
    messages.success(request, f"{name} is no longer in {team.name}.")
    if not access.may(request.user, team.pk, access.MEMBERS):
        return redirect("dashboard:teams")  # an owner who left: the page is no longer theirs
    return redirect("dashboard:team_members", slug=team.slug)
