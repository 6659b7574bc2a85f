"""Attack: someone who is not a team's owner changes who is in it, or an owner leaves it ownerless.

A team's owners invite members, set roles and remove members on the dashboard's Team page
(dashboard:team_members, docs/teams.md "A second lab"); only they may, and the team always keeps
an owner. Per round:

  "foreign invite"     B's owner (team B only) invites a new account into team A: is it in A?
  "foreign self-add"   B's owner adds their own account to team A as owner: are they in A?
  "researcher promote" A's researcher makes themselves owner: is their role owner?
  "annotator remove"   A's annotator removes A's owner: is the owner gone?
  "last owner"         A's only owner demotes themselves, then removes themselves: has A no owner?
  "told apart"         B's owner's answer for A's member page against an unknown team's: do they
                       differ (a foreign team must answer as an unknown one)?

A try succeeds when the change is made, A is left with no owner, or the answers tell B that A
exists. Setup runs Django against the server's database (same DATABASE_URL as the server).

    DATABASE_URL=... .venv/bin/python -m bench.attacks.cross_team_members --base-url http://127.0.0.1:8811
"""

import argparse
import json
import re
import secrets
import uuid

from ._admin_client import AdminBrowser
from ._common import django_ready, wilson_interval

NAME = "cross-team-members"
CLAIM = "Someone who is not a team's owner changes its members, or the team is left without an owner."
VARIANTS = ("foreign invite", "foreign self-add", "researcher promote", "annotator remove", "last owner", "told apart")
ROUNDS = 3
CSRF_VALUE = re.compile(r'name="csrfmiddlewaretoken" value="[^"]*"')


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team_a = Team.objects.create(slug=f"members-a-{tag}", name=f"Members A {tag}")
    team_b = Team.objects.create(slug=f"members-b-{tag}", name=f"Members B {tag}")
    users = get_user_model().objects
    group = ensure_researcher_group()
    logins = {}
    for who, team, role in [
        ("owner_a", team_a, Role.OWNER),
        ("researcher_a", team_a, Role.RESEARCHER),
        ("annotator_a", team_a, Role.ANNOTATOR),
        ("owner_b", team_b, Role.OWNER),
    ]:
        password = secrets.token_urlsafe(16)
        user = users.create_user(f"members-{who.replace('_', '-')}-{tag}", password=password, is_staff=True)
        user.groups.add(group)
        Membership.objects.create(team=team, user=user, role=role)
        logins[who] = (user.username, password)
    return {"team_a": team_a.pk, "slug_a": team_a.slug, "logins": logins, "tag": tag}


def _membership(team_id, username):
    from teams.models import Membership

    return Membership.objects.filter(team_id=team_id, user__username=username).first()


def _owners(team_id):
    from teams.models import Membership, Role

    return Membership.objects.filter(team_id=team_id, role=Role.OWNER).count()


def _reset(team_id, logins):
    """A as setup made it, before each round: a success of the round before does not carry over."""
    from django.contrib.auth import get_user_model

    from teams.models import Membership, Role

    roles = {"owner_a": Role.OWNER, "researcher_a": Role.RESEARCHER, "annotator_a": Role.ANNOTATOR}
    Membership.objects.filter(team_id=team_id).exclude(user__username__in=[logins[who][0] for who in roles]).delete()
    for who, role in roles.items():
        user = get_user_model().objects.get(username=logins[who][0])
        Membership.objects.update_or_create(team_id=team_id, user=user, defaults={"role": role})


def _signed_in(base_url, login):
    browser = AdminBrowser(base_url)
    assert browser.login(*login), f"{login[0]} could not log in"
    return browser


def run(base_url, *, seed=0):
    known = setup(seed)
    team, slug, logins = known["team_a"], known["slug_a"], known["logins"]
    owner_a, researcher_a, owner_b = (logins[who][0] for who in ("owner_a", "researcher_a", "owner_b"))
    browsers = {who: _signed_in(base_url, login) for who, login in logins.items()}
    page = f"/dashboard/team/{slug}/"
    by_variant: dict[str, list[bool]] = {variant: [] for variant in VARIANTS}
    for number in range(ROUNDS):
        _reset(team, logins)
        intruder = f"members-intruder-{known['tag']}-{number}"
        browsers["owner_b"].post(page + "invite/", {"username": intruder, "role": "owner", "new_account": "on"})
        by_variant["foreign invite"].append(_membership(team, intruder) is not None)
        browsers["owner_b"].post(page + "invite/", {"username": owner_b, "role": "owner"})
        by_variant["foreign self-add"].append(_membership(team, owner_b) is not None)

        mine = _membership(team, researcher_a)
        browsers["researcher_a"].post(f"{page}members/{mine.pk}/role/", {"role": "owner"})
        by_variant["researcher promote"].append(_membership(team, researcher_a).role == "owner")

        boss = _membership(team, owner_a)
        browsers["annotator_a"].post(f"{page}members/{boss.pk}/remove/", {})
        by_variant["annotator remove"].append(_membership(team, owner_a) is None)

        _reset(team, logins)  # A's owner alone again: the only owner
        boss = _membership(team, owner_a)
        browsers["owner_a"].post(f"{page}members/{boss.pk}/role/", {"role": "researcher"})
        demoted = _owners(team) == 0
        _reset(team, logins)
        browsers["owner_a"].post(f"{page}members/{boss.pk}/remove/", {})
        by_variant["last owner"].append(demoted or _owners(team) == 0)

        nobody = f"no-such-team-{uuid.uuid4().hex[:8]}"
        foreign = browsers["owner_b"].get(page)
        unknown = browsers["owner_b"].get(f"/dashboard/team/{nobody}/")
        by_variant["told apart"].append(
            (foreign[0], CSRF_VALUE.sub("", foreign[1]).replace(slug, "ID"))
            != (unknown[0], CSRF_VALUE.sub("", unknown[1]).replace(nobody, "ID"))
        )
    tries = sum(len(outcomes) for outcomes in by_variant.values())
    succeeded = sum(sum(outcomes) for outcomes in by_variant.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of tries where a non-owner changed A's members, A lost its last owner, "
        "or B told A's page from an unknown team's",
        "value": round(succeeded / tries, 4),
        "interval": wilson_interval(succeeded, tries),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(f"{variant}: {sum(outcomes)}/{len(outcomes)}" for variant, outcomes in by_variant.items()),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
