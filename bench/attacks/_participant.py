"""What the issue-39 "one set of checks" attacks share (adversarial_junk, guesser_kinds,
grammaticality_foreign): a participant who speaks HTTP only, the judge's Django set-up against the
server's own database, and a Wilson interval.

The participant (`Participant`, `requests` with a cookie jar, as a browser) arrives by a study link
(`/study/<slug>/?PROLIFIC_PID=…`), reads the pages' HTML forms and posts them back with the CSRF
cookie's token. The judge's side (`django_ready`) builds the studies the attacks need and reads
what the server did (DATABASE_URL must name the server's database); nothing it reads is shown to
the participant.
"""

import html
import math
import os
import re
import secrets
import sys
from pathlib import Path
from urllib.parse import urljoin

import requests

REPO = Path(__file__).resolve().parent.parent.parent
LABELS = ("entailment", "neutral", "contradiction")
_INPUT = re.compile(r"<input\b[^>]*>", re.S)
_ATTRIBUTE = re.compile(r'(\w[\w-]*)="([^"]*)"')


def django_ready() -> None:
    """Django set up against the database named by DATABASE_URL (the server's)."""
    if str(REPO) not in sys.path:
        sys.path.insert(0, str(REPO))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "annotation_site.settings")
    os.environ.setdefault("SECRET_KEY", secrets.token_urlsafe(50))
    import django

    django.setup()


def wilson(successes: int, tries: int, z: float = 1.96) -> list[float] | None:
    """The Wilson score interval of a share (95%)."""
    if not tries:
        return None
    share = successes / tries
    centre = (share + z * z / (2 * tries)) / (1 + z * z / tries)
    half = z * math.sqrt(share * (1 - share) / tries + z * z / (4 * tries * tries)) / (1 + z * z / tries)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def radio_fields(page: str) -> dict[str, list[str]]:
    """{field name: [values]} of the page's radio buttons, in page order."""
    fields: dict[str, list[str]] = {}
    for tag in _INPUT.findall(page):
        attributes = dict(_ATTRIBUTE.findall(tag))
        if attributes.get("type") == "radio" and "name" in attributes:
            fields.setdefault(html.unescape(attributes["name"]), []).append(html.unescape(attributes.get("value", "")))
    return fields


def hidden_values(page: str, name: str) -> list[str]:
    values = []
    for tag in _INPUT.findall(page):
        attributes = dict(_ATTRIBUTE.findall(tag))
        if attributes.get("type") == "hidden" and attributes.get("name") == name:
            values.append(html.unescape(attributes.get("value", "")))
    return values


class Participant:
    """One participant id in one browser (its own cookie jar)."""

    def __init__(self, base_url: str, pid: str) -> None:
        self.base = base_url.rstrip("/") + "/"
        self.pid = pid
        self.http = requests.Session()
        self.last_url = ""

    def url(self, path: str) -> str:
        return urljoin(self.base, path.lstrip("/"))

    def get(self, path: str, **options) -> requests.Response:
        response = self.http.get(self.url(path), timeout=30, **options)
        self.last_url = response.url
        return response

    def post(self, path: str, data, **options) -> requests.Response:
        headers: dict[str, str] = {"X-CSRFToken": self.http.cookies.get("csrftoken") or "", "Referer": self.url(path)}
        headers.update(options.pop("headers", {}))
        response = self.http.post(self.url(path), data=data, headers=headers, timeout=60, **options)
        self.last_url = response.url
        return response

    def arrive(self, study_slug: str, session_id: str = "") -> requests.Response:
        """Follow the study link as a Prolific participant; ends on the study's first task page."""
        params = {"PROLIFIC_PID": self.pid, "STUDY_ID": f"attack-{study_slug}", "SESSION_ID": session_id or self.pid}
        return self.get(f"/study/{study_slug}/", params=params)

    def answer_batches(self, next_path: str, batches: int, choose) -> str:
        """Take `batches` batches from `next_path`, answering each radio field with `choose(values)`;
        returns the page after the last (the completion page, or the held page)."""
        for _ in range(batches):
            page = self.get(next_path)
            fields = radio_fields(page.text)
            if not fields:
                return page.text
            self.post(page.url, {name: choose(values) for name, values in fields.items()})
        return self.get(next_path).text
