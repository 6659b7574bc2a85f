"""Attack: a preview link that sends the researcher to another site when they end the preview.

"End preview" goes back to the page the preview was started from, which the start link carries
(`/study/<slug>/preview/?back=<page>`, the dashboard's study page). The link is anyone's to write:
a participant's message or a forum post can hand a researcher a preview link whose `back` is a
look-alike login page elsewhere. Per round, a researcher opens the preview's page with each
address below, starts the preview as the page offers it (or with `back` posted by hand), and ends
it; a try succeeds when the answer to "End preview" (not followed) sends the browser off this site:
another host, a scheme-relative `//host`, a backslash that browsers read as one, or any scheme.

Setup runs Django against the server's database (same DATABASE_URL as the server): a team's writing
study with premises, and a researcher of that team with a password.

    DATABASE_URL=... .venv/bin/python -m bench.attacks.preview_end_elsewhere --base-url http://127.0.0.1:8812
"""

import argparse
import json
import secrets
import urllib.parse
import urllib.request
import uuid

from ._admin_client import AdminBrowser, form_fields
from ._common import django_ready, wilson_interval

NAME = "preview-end-elsewhere"
CLAIM = "A preview link sends the researcher to another site when they end the preview."
ELSEWHERE = (
    "https://evil.example/login",
    "http://evil.example/",
    "//evil.example/login",
    "/\\evil.example/login",
    "\\\\evil.example/login",
    "https:evil.example",
    "/%2F%2Fevil.example",
    " //evil.example",
    "javascript:alert(1)",
    "ftp://evil.example/",
)
ROUNDS = 2
HOW = ("offered", "posted")  # the page's own hidden field, or `back` posted by hand


def setup(seed=0):
    django_ready()
    from django.contrib.auth import get_user_model

    from base.permissions import ensure_researcher_group
    from corpus.models import Dataset, Genre, Premise, Split
    from crowd.models import Study
    from teams.models import Membership, Role, Team

    tag = f"{seed}-{uuid.uuid4().hex[:8]}"
    team = Team.objects.create(slug=f"preview-back-{tag}", name=f"Preview back {tag}")
    dataset = Dataset.objects.create(slug=f"preview-back-{tag}", name=f"preview-back-{tag}", team=team)
    genre = Genre.objects.order_by("pk").first()
    assert genre is not None
    for number in range(4):
        Premise.objects.create(
            dataset=dataset, genre=genre, split=Split.TRAIN, prompt_id=f"{tag}-{number}", text=f"A boat {number} sails."
        )
    study = Study.objects.create(
        slug=f"preview-back-{tag}",
        name=f"Preview back {tag}",
        dataset=dataset,
        team=team,
        task_kind="writing",
        completion_code="C",
    )
    password = secrets.token_urlsafe(16)
    researcher = get_user_model().objects.create_user(f"preview-back-{tag}", password=password, is_staff=True)
    researcher.groups.add(ensure_researcher_group())
    Membership.objects.create(team=team, user=researcher, role=Role.OWNER)
    return {"study": study.slug, "login": (researcher.username, password)}


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _end_preview_location(browser: AdminBrowser) -> str:
    """Where "End preview" sends the browser, read from the answer without following it."""
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(browser.cookies), _NoRedirect)
    body = urllib.parse.urlencode({"csrfmiddlewaretoken": browser._token()}).encode()
    request = urllib.request.Request(
        browser.base_url + "/preview/end/", data=body, headers={"Referer": browser.base_url + "/"}, method="POST"
    )
    try:
        with opener.open(request, timeout=30) as answer:
            return answer.headers.get("Location", "")
    except urllib.error.HTTPError as answer:
        return answer.headers.get("Location", "")


def _off_site(location: str, base_url: str) -> bool:
    location = location.strip()
    if not location:
        return False
    normalised = location.replace("\\", "/")
    if normalised.startswith("//"):
        return True
    parts, base = urllib.parse.urlsplit(normalised), urllib.parse.urlsplit(base_url)
    if parts.scheme and parts.scheme not in ("http", "https"):
        return True
    if parts.scheme and not parts.netloc:
        # "https:evil.example" from an http page: a browser reads another scheme's as absolute.
        return parts.scheme != base.scheme
    return bool(parts.netloc) and parts.netloc != base.netloc


def run(base_url, *, seed=0):
    known = setup(seed)
    browser = AdminBrowser(base_url)
    assert browser.login(*known["login"]), "the researcher could not log in"
    start = f"/study/{known['study']}/preview/"
    by_how: dict[str, list[bool]] = {how: [] for how in HOW}
    for _ in range(ROUNDS):
        for address in ELSEWHERE:
            for how in HOW:
                _, page = browser.get(f"{start}?{urllib.parse.urlencode({'back': address})}")
                fields = form_fields(page) if how == "offered" else {"back": address}
                browser.post(start, fields)
                by_how[how].append(_off_site(_end_preview_location(browser), base_url))
    # The control: a page of this site is where the preview ends, so the door is there to attack.
    _, page = browser.get(f"{start}?back=/dashboard/")
    browser.post(start, form_fields(page))
    control = _end_preview_location(browser)
    tries = sum(len(outcomes) for outcomes in by_how.values())
    succeeded = sum(sum(outcomes) for outcomes in by_how.values())
    return {
        "attack": NAME,
        "tries": tries,
        "succeeded": succeeded,
        "measure": "share of ended previews sent off this site",
        "value": round(succeeded / tries, 4),
        "interval": wilson_interval(succeeded, tries),
        "at_chance_or_refused": succeeded == 0,
        "detail": "; ".join(f"{how}: {sum(outcomes)}/{len(outcomes)}" for how, outcomes in by_how.items())
        + f"; control (back=/dashboard/) ended at {control}",
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base-url", default="http://127.0.0.1:8000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    print(json.dumps(run(args.base_url, seed=args.seed), indent=2))


if __name__ == "__main__":
    main()
