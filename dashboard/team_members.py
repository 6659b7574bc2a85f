"""Who is in a team, changed by its owners (the dashboard's team page) and by the operator
(`manage.py create_team`): each change and its audit entry in one transaction (docs/teams.md,
"A second lab"). The rule that a team keeps an owner is `teams.services.keep_an_owner`; these
writes live here, above the audit log, because the teams app sits below it."""

from dataclasses import dataclass
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from audit import services as audit
from base.permissions import ensure_researcher_group
from teams.models import Membership, Role, Team
from teams.services import LastOwnerError, keep_an_owner, lock_team


class MembershipRefusedError(ValueError):
    """A change of members refused with the reason the page shows; nothing was changed."""


@dataclass(frozen=True)
class Invitation:
    membership: Membership
    # The one-time page where a new account sets its password ("" for an account that has one).
    set_password_path: str


def set_password_path(user: Any) -> str:
    """Django's set-password page for `user`, valid once (setting the password or logging in
    changes what the token was made of) and until PASSWORD_RESET_TIMEOUT."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("password_reset_confirm", kwargs={"uidb64": uid, "token": default_token_generator.make_token(user)})


def _account(username: str, *, new_account: bool) -> tuple[Any, bool]:
    """The account named, or a new one without a password; whether it was made here."""
    User = get_user_model()
    username = username.strip()
    if not username:
        raise MembershipRefusedError("Give the member's username.")
    existing = User.objects.filter(username=username).first()
    if new_account:
        if existing is not None:
            raise MembershipRefusedError(
                f"An account '{username}' exists already: untick 'new account' to add it as it is."
            )
        try:
            User._meta.get_field("username").run_validators(username)
        except ValidationError as error:
            raise MembershipRefusedError(f"'{username}' cannot be a username: {' '.join(error.messages)}") from error
        user = User.objects.create_user(username=username)  # no password until they set one
        return user, True
    if existing is None:
        raise MembershipRefusedError(f"No account '{username}': tick 'new account' to create one.")
    if hasattr(existing, "worker"):
        raise MembershipRefusedError(
            f"'{username}' is a participant's account; team members use accounts of their own."
        )
    if not existing.is_active:
        raise MembershipRefusedError(f"The account '{username}' is deactivated; ask an administrator.")
    return existing, False


def _researcher(user: Any) -> None:
    """Staff and in the researcher group, as `grant_researcher` does; they reach their teams' only."""
    user.groups.add(ensure_researcher_group())
    if not user.is_staff:
        user.is_staff = True
        user.save(update_fields=["is_staff"])


def _checked_role(role: str) -> str:
    if role not in Role.values:
        raise MembershipRefusedError(f"Choose a role: {', '.join(Role.values)}.")
    return role


@transaction.atomic
def invite_member(team: Team, *, username: str, role: str, new_account: bool, actor: Any) -> Invitation:
    """An existing account, or a new one whose set-password link the owner passes on."""
    role = _checked_role(role)
    lock_team(team.pk)
    user, created = _account(username, new_account=new_account)
    current = Membership.objects.filter(team=team, user=user).first()
    if current is not None:
        raise MembershipRefusedError(
            f"{user.get_username()} is in the team already ({current.role}): change their role in the list."
        )
    _researcher(user)
    membership = Membership.objects.create(team=team, user=user, role=role)
    audit.record(
        "team.member_added",
        actor=actor,
        subject=membership,
        team_id=team.pk,
        after={"user": user.get_username(), "role": role, "account": "created" if created else "existing"},
    )
    return Invitation(membership, set_password_path(user) if created else "")


@transaction.atomic
def set_member_role(membership: Membership, role: str, *, actor: Any) -> bool:
    """Give the member `role`; False when it is theirs already. The team's last owner keeps theirs."""
    role = _checked_role(role)
    lock_team(membership.team_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    if membership.role == role:
        return False
    try:
        keep_an_owner(membership, role)
    except LastOwnerError as error:
        raise MembershipRefusedError(str(error)) from error
    before = membership.role
    membership.role = role
    membership.save(update_fields=["role"])
    audit.record(
        "team.member_role",
        actor=actor,
        subject=membership,
        team_id=membership.team_id,
        before={"role": before},
        after={"role": role},
    )
    return True


@transaction.atomic
def remove_member(membership: Membership, *, actor: Any) -> None:
    """Their account stays (it may be in other teams); the team's last owner stays."""
    lock_team(membership.team_id)
    membership = Membership.objects.select_related("user").get(pk=membership.pk)
    try:
        keep_an_owner(membership, None)
    except LastOwnerError as error:
        raise MembershipRefusedError(str(error)) from error
    name = membership.user.get_username()
    audit.record(
        "team.member_removed",
        actor=actor,
        subject_type="teams.membership",
        subject_id=membership.pk,
        subject_label=name,
        team_id=membership.team_id,
        before={"user": name, "role": membership.role},
    )
    membership.delete()


@transaction.atomic
def create_team(slug: str, *, name: str, owner: str, create_owner: bool, actor: Any = None) -> tuple[Team, Invitation]:
    """A new team (a second lab) and its first owner, an existing account or a new one."""
    slug, name = slug.strip(), name.strip()
    if not name:
        raise MembershipRefusedError("Give the team a name.")
    try:
        Team._meta.get_field("slug").run_validators(slug)
        Team._meta.get_field("name").run_validators(name)
    except ValidationError as error:
        raise MembershipRefusedError(" ".join(error.messages)) from error
    if not slug:
        raise MembershipRefusedError("Give the team a slug (letters, digits, hyphens).")
    if "--" in slug:
        # A team's new datasets are named `<team slug>--<name>` (corpus.selectors.dataset_named).
        raise MembershipRefusedError("A team's slug may not contain '--'.")
    if Team.objects.filter(slug=slug).exists():
        raise MembershipRefusedError(f"A team '{slug}' exists already.")
    team = Team.objects.create(slug=slug, name=name)
    audit.record("team.created", actor=actor, subject=team, team_id=team.pk, after={"slug": slug, "name": name})
    return team, invite_member(team, username=owner, role=Role.OWNER, new_account=create_owner, actor=actor)
